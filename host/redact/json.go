package redact

import (
	"bytes"
	"encoding/json"

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
		s, c := r.Redact(x)
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
