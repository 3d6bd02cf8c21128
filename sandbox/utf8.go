package sandbox

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// A plugin's output is text for the model, and everything downstream (JSON
// to a provider, protobuf to an adapter, SQLite, SSE) wants valid UTF-8; a
// protobuf string with invalid bytes fails the whole model call. So every
// string of a result is made valid here, at the boundary: each run of
// invalid bytes becomes U+FFFD. A plugin with binary output returns it as a
// content block with base64 data and a mimeType (ABI.md), never as text.

// validUTF8 returns r with every string valid UTF-8.
func (r CallResult) validUTF8() CallResult {
	for i := range r.Content {
		c := &r.Content[i]
		c.Type = validString(c.Type)
		c.Text = validString(c.Text)
		c.Data = validString(c.Data)
		c.MimeType = validString(c.MimeType)
	}
	r.StructuredContent = validJSON(r.StructuredContent)
	return r
}

func validString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// validJSON re-encodes raw JSON that holds invalid UTF-8 (a RawMessage keeps
// the plugin's bytes as they were); decoding replaces the bad bytes.
func validJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || utf8.Valid(raw) {
		return raw
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		b, _ := json.Marshal(validString(string(raw)))
		return b
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
