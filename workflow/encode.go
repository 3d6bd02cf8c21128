package workflow

import (
	"bytes"
	"encoding/json"
	"slices"
)

// A run's record is stored whole at every step's start and end, so encoding it whole
// each time made a run of n steps encode O(n²) step records. recEncoder, one per run
// (sched.enc, used under s.mu), keeps each step's encoded record and assembles the
// record from those bytes; the bytes are exactly json.Marshal's of the whole record
// (the map's keys sorted, every value encoded as encoding/json encodes it), which
// TestTheStoredRecordIsTheBytesJSONMarshalMakes checks at every write.
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
	head := *r
	head.Steps = nil
	b, err := json.Marshal(&head)
	if err != nil {
		return nil, err
	}
	if r.Steps == nil || !bytes.HasSuffix(b, stepsNull) {
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
	b = append(b[:len(b)-len(`null}`)], '{')
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
	return append(b, '}', '}'), nil
}

// step returns `"id":{...}` for sr, from the kept bytes when they are sr's and sr has
// ended or waits.
func (e *recEncoder) step(id string, sr *StepRecord) ([]byte, error) {
	if k, ok := e.steps[id]; ok && k.r == sr && sr != nil && sr.Status != StatusRunning {
		return k.b, nil
	}
	kb, err := json.Marshal(id)
	if err != nil {
		return nil, err
	}
	vb, err := json.Marshal(sr)
	if err != nil {
		return nil, err
	}
	b := append(append(kb, ':'), vb...)
	if sr != nil && sr.Status != StatusRunning {
		e.steps[id] = encodedStep{r: sr, b: b}
	} else {
		delete(e.steps, id)
	}
	return b, nil
}
