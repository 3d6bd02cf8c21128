package workflow

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// A run's record is stored whole at every step's start and end, so encoding it whole
// each time made a run of n steps encode O(n²) step records. recEncoder, one per run
// (sched.enc, used under s.mu), keeps each step's encoded record and assembles the
// record from those bytes; the bytes are exactly json.Marshal's of the whole record
// (the map's keys sorted, every value encoded as encoding/json encodes it), which
// the package's tests check at every write (TestMain in encode_test.go).
//
// Ownership: a step's bytes are reused only for the same *StepRecord and only when it
// is not running. A running record is changed in place (its attempts, its items, finish
// ending it), so it is encoded at every write; a record that is not running is never
// changed in place — a new start, a settle, an adopted end each put a new *StepRecord
// in Record.Steps. Whoever changes an ended step's record in place must make a new one
// instead, or the stored record would go stale.
type recEncoder struct {
	steps map[string]encodedStep
	ids   []string // scratch: the step ids, sorted
	head  Record   // the fields (Steps nil) headB encodes; Outputs always nil
	headB []byte   // json.Marshal(&head) without its `null}`
	size  int      // the last record's length: the next one's capacity
}

// encodedStep is one step's `"id":{...}`, for the record r.
type encodedStep struct {
	r *StepRecord
	b []byte
}

// stepsNull is how json.Marshal ends a record whose Steps is nil: Steps is the last field.
var stepsNull = []byte(`"steps":null}`)

// encode returns json.Marshal(r), reusing the bytes of the steps that did not change.
func (e *recEncoder) encode(r *Record) ([]byte, error) {
	if r.Steps == nil {
		return json.Marshal(r)
	}
	hb, ok, err := e.headBytes(r)
	if err != nil || !ok {
		return json.Marshal(r) // a field after Steps: no assembly
	}
	if e.steps == nil {
		e.steps = map[string]encodedStep{}
	}
	e.ids = e.ids[:0]
	for id := range r.Steps {
		e.ids = append(e.ids, id)
	}
	slices.Sort(e.ids) // encoding/json sorts a map's string keys the same way
	b := make([]byte, 0, max(e.size, 512))
	b = append(append(b, hb...), '{')
	for i, id := range e.ids {
		if i > 0 {
			b = append(b, ',')
		}
		sb, err := e.step(id, r.Steps[id])
		if err != nil {
			return nil, err
		}
		b = append(b, sb...)
	}
	b = append(b, '}', '}')
	e.size = len(b) + len(b)/8
	return b, nil
}

// headBytes is r encoded up to its steps (`{..."steps":`); ok is false when Steps is
// not the last field. The bytes are kept while the fields they encode stay the same
// (all of a run's writes but its last, which sets Outputs, are the same head).
func (e *recEncoder) headBytes(r *Record) ([]byte, bool, error) {
	h := e.head
	if e.headB != nil && r.Outputs == nil && h.Workflow == r.Workflow && h.RunID == r.RunID && h.Owner == r.Owner &&
		bytes.Equal(h.Inputs, r.Inputs) && h.Status == r.Status && h.Started.Equal(r.Started) && h.Started.Location() == r.Started.Location() &&
		h.Ended.Equal(r.Ended) && h.Ended.Location() == r.Ended.Location() && h.Error == r.Error {
		return e.headB, true, nil
	}
	head := *r
	head.Steps = nil
	b, err := json.Marshal(&head)
	if err != nil || !bytes.HasSuffix(b, stepsNull) {
		return nil, false, err
	}
	b = b[:len(b)-len(`null}`)]
	if r.Outputs == nil {
		head.Inputs = bytes.Clone(r.Inputs)
		e.head, e.headB = head, b
	}
	return b, true, nil
}

// step returns `"id":{...}` for sr, from the kept bytes when they are sr's and sr has
// ended or waits.
func (e *recEncoder) step(id string, sr *StepRecord) ([]byte, error) {
	if k, ok := e.steps[id]; ok && k.r == sr && sr != nil && sr.Status != StatusRunning {
		return k.b, nil
	}
	b, err := appendStep(appendString(nil, id), sr)
	if err != nil {
		return nil, err
	}
	if sr != nil && sr.Status != StatusRunning {
		e.steps[id] = encodedStep{r: sr, b: b}
	} else {
		delete(e.steps, id)
	}
	return b, nil
}

// appendStep appends `:` and sr as json.Marshal encodes it (the fields in StepRecord's
// order, each omitted as its tag says), with encoding/json called only for the output
// and the items: a step's record is encoded at every write while it runs, and reflection
// over its fields and its times was most of that.
func appendStep(b []byte, sr *StepRecord) ([]byte, error) {
	b = append(b, ':')
	if sr == nil {
		return append(b, "null"...), nil
	}
	b = appendString(append(b, `{"status":`...), sr.Status)
	var err error
	if !sr.Started.IsZero() {
		if b, err = appendTime(append(b, `,"started":`...), sr.Started); err != nil {
			return nil, err
		}
	}
	if !sr.Ended.IsZero() {
		if b, err = appendTime(append(b, `,"ended":`...), sr.Ended); err != nil {
			return nil, err
		}
	}
	if sr.Attempts != 0 {
		b = append(append(b, `,"attempts":`...), strconv.Itoa(sr.Attempts)...)
	}
	if sr.Output != nil {
		if b, err = appendJSON(append(b, `,"output":`...), sr.Output); err != nil {
			return nil, err
		}
	}
	if sr.Error != "" {
		b = appendString(append(b, `,"error":`...), sr.Error)
	}
	if len(sr.Items) > 0 {
		if b, err = appendJSON(append(b, `,"items":`...), sr.Items); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func appendJSON(b []byte, v any) ([]byte, error) {
	vb, err := json.Marshal(v)
	return append(b, vb...), err
}

// appendTime is time.Time's MarshalJSON appended: RFC 3339 with nanoseconds, quoted;
// a time it refuses (a year outside 0–9999) is its error.
func appendTime(b []byte, t time.Time) ([]byte, error) {
	if y := t.Year(); y < 0 || y > 9999 {
		return appendJSON(b, t)
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}

// appendString is s as json.Marshal quotes it: as it is when every byte is printable
// ASCII that needs no escape (encoding/json escapes <, > and & too), else json.Marshal's.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
