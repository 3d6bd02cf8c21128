package redact

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/agenthost/agenthost/loop"
)

// redactContent redacts a stage's content. Tool arguments are a JSON object, and a tool
// result often JSON: there only string values are redacted (a string stays a string,
// so the arguments still match their schema), and the JSON is written again only when
// something was found. Other text, and JSON that does not parse, is redacted as text.
func (r *Redactor) redactContent(stage loop.Stage, content string) (string, map[string]int) {
	if stage != loop.StageToolArgs && stage != loop.StageToolResult {
		return r.Redact(content)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(content)))
	dec.UseNumber() // numbers pass through exactly
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return r.Redact(content)
	}
	counts := map[string]int{}
	v = r.walk(v, counts)
	if len(counts) == 0 {
		return content, counts
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return r.Redact(content)
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), counts
}

func (r *Redactor) walk(v any, counts map[string]int) any {
	switch x := v.(type) {
	case string:
		// JSON in a string (a tool call's arguments in a message or an event) is redacted
		// as JSON: what a model wrote with escapes ("ana\uff20example.org") is matched
		// decoded, and the string stays the JSON it was (text that does not parse is
		// redacted as text).
		stage := loop.StageOutput
		if t := strings.TrimSpace(x); len(t) > 1 && (t[0] == '{' || t[0] == '[') {
			stage = loop.StageToolArgs
		}
		s, c := r.redactContent(stage, x)
		for k, n := range c {
			counts[k] += n
		}
		return s
	case []any:
		for i := range x {
			x[i] = r.walk(x[i], counts)
		}
	case map[string]any:
		for k := range x {
			x[k] = r.walk(x[k], counts)
		}
	}
	return v
}

// Entry is the "store" stage (loop.Config.Scrub): the entry with every string of its
// message, event data and compaction redacted, as a new entry (the run keeps the one it
// has). Ids, kinds and times are left alone: they are not content, and the stores check
// them against their rows.
func (r *Redactor) Entry(e loop.Entry) loop.Entry {
	switch {
	case e.Message != nil:
		m := redactJSON(r, *e.Message)
		e.Message = &m
	case e.Event != nil:
		ev := *e.Event
		ev.Data = redactJSON(r, ev.Data)
		e.Event = &ev
	case e.Compaction != nil:
		c := redactJSON(r, *e.Compaction)
		e.Compaction = &c
	}
	return e
}

// redactJSON redacts every string in v's JSON form and decodes it back into a new T. A
// value that does not survive the round trip (it cannot: it is what the store writes)
// is replaced by its zero value rather than stored unredacted.
func redactJSON[T any](r *Redactor, v T) T {
	var zero T
	b, err := json.Marshal(v)
	if err != nil {
		return zero
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var g any
	if err := dec.Decode(&g); err != nil {
		return zero
	}
	g = r.walk(g, map[string]int{})
	b, err = json.Marshal(g)
	if err != nil {
		return zero
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		return zero
	}
	return out
}
