package workflow

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// headCache keeps a run's stored head while the fields it encodes stay the same (all
// of a run's writes but its first and last): it is encoded again only when they change.
type headCache struct {
	rec Record   // the fields (Steps nil) b encodes; Outputs always nil
	ids []string // the step rows b names
	at  string   // where they are
	b   []byte
}

// bytes is headJSON(r, ids, at), kept while r's head fields, ids and at stay the same.
func (c *headCache) bytes(r *Record, ids []string, at string) ([]byte, error) {
	h := c.rec
	if c.b != nil && r.Outputs == nil && slices.Equal(c.ids, ids) && c.at == at && h.Workflow == r.Workflow && h.RunID == r.RunID && h.Owner == r.Owner &&
		bytes.Equal(h.Inputs, r.Inputs) && h.Status == r.Status && h.Started.Equal(r.Started) && h.Started.Location() == r.Started.Location() &&
		h.Ended.Equal(r.Ended) && h.Ended.Location() == r.Ended.Location() && h.Error == r.Error {
		return c.b, nil
	}
	b, err := headJSON(r, ids, at)
	if err != nil {
		return nil, err
	}
	c.keep(r, ids, at, b)
	return b, nil
}

// keep makes b (headJSON(r, ids, at)) the kept head, unless r has outputs (a run's last
// write: never asked for again).
func (c *headCache) keep(r *Record, ids []string, at string, b []byte) {
	if r.Outputs == nil {
		h := *r
		h.Steps, h.Inputs = nil, bytes.Clone(r.Inputs)
		c.rec, c.ids, c.at, c.b = h, slices.Clone(ids), at, b
	}
}

// appendStepValue appends sr as json.Marshal encodes it (the fields in StepRecord's
// order, each omitted as its tag says), with encoding/json called only for the output
// and the items: a running step's record is encoded at every write, and reflection over
// its fields and its times was most of that.
func appendStepValue(b []byte, sr *StepRecord) ([]byte, error) {
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
		b = strconv.AppendInt(append(b, `,"attempts":`...), int64(sr.Attempts), 10)
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
