package loop

import (
	"encoding/json"
	"slices"
)

// flatSchema is the fast path for the commonest tool schema: an object of named
// properties, each a string, number, integer or boolean, some required, others perhaps
// refused (additionalProperties false). Such a schema is checked on the raw JSON with no
// decoding into values; only a document the fast path accepts skips the full validator.
// Anything it does not recognise — a keyword it does not know, a nested value, an escape
// in a key, a duplicate key, a malformed document — goes to the full validator, so what is
// refused, and the message saying why, never changes (TestFastSchemaAgreesWithTheValidator).
type flatSchema struct {
	props    map[string]byte // property → 's' string, 'n' number, 'i' integer, 'b' boolean
	required []string
	closed   bool // additionalProperties: false
}

// flatSchemaOf recognises a flat schema, nil otherwise.
func flatSchemaOf(raw []byte) *flatSchema {
	var s map[string]json.RawMessage
	if json.Unmarshal(raw, &s) != nil || string(s["type"]) != `"object"` {
		return nil
	}
	f := &flatSchema{props: map[string]byte{}}
	for k, v := range s {
		if !f.keyword(k, v) {
			return nil
		}
	}
	for _, r := range f.required {
		if _, ok := f.props[r]; !ok {
			return nil // required but undeclared: leave it to the validator
		}
	}
	return f
}

// keyword takes one keyword of the schema; false when the fast path cannot check it.
func (f *flatSchema) keyword(k string, v json.RawMessage) bool {
	switch k {
	case "type", "description", "title", "$schema", "$comment":
		return true
	case "properties":
		var props map[string]map[string]json.RawMessage
		if json.Unmarshal(v, &props) != nil {
			return false
		}
		for name, p := range props {
			t := flatType(p)
			if t == 0 {
				return false
			}
			f.props[name] = t
		}
		return true
	case "required":
		return json.Unmarshal(v, &f.required) == nil
	case "additionalProperties":
		f.closed = string(v) == "false"
		return f.closed || string(v) == "true"
	}
	return false
}

// flatType is a property schema's type letter, 0 when it says more than its type (enum,
// minimum, pattern, format…: the full validator's) or has none.
func flatType(p map[string]json.RawMessage) byte {
	t := byte(0)
	for k, v := range p {
		switch k {
		case "type":
			t = map[string]byte{`"string"`: 's', `"number"`: 'n', `"integer"`: 'i', `"boolean"`: 'b'}[string(v)]
			if t == 0 {
				return 0
			}
		case "description", "title", "examples", "$comment":
		default:
			return 0
		}
	}
	return t
}

// accepts reports whether doc certainly satisfies the schema; false means "ask the full
// validator", not "invalid".
func (f *flatSchema) accepts(doc string) bool {
	p := scanner{s: doc}
	p.space()
	if !p.eat('{') {
		return false
	}
	var buf [8]string // the keys seen: room for the usual handful without allocating
	seen, ok := f.members(&p, buf[:0])
	if !ok {
		return false
	}
	p.space()
	if p.i != len(p.s) {
		return false
	}
	for _, r := range f.required {
		if !slices.Contains(seen, r) {
			return false
		}
	}
	return true
}

// members reads the object's members up to its closing brace, checking each value's
// type, and returns the keys seen.
func (f *flatSchema) members(p *scanner, seen []string) ([]string, bool) {
	p.space()
	if p.eat('}') {
		return seen, true
	}
	for {
		p.space()
		key, ok := p.key()
		if !ok || slices.Contains(seen, key) {
			return nil, false
		}
		seen = append(seen, key)
		p.space()
		if !p.eat(':') {
			return nil, false
		}
		p.space()
		if !f.fits(key, p.value()) {
			return nil, false
		}
		p.space()
		if p.eat('}') {
			return seen, true
		}
		if !p.eat(',') {
			return nil, false
		}
	}
}

// fits reports whether a value of kind may stand under key.
func (f *flatSchema) fits(key string, kind byte) bool {
	if kind == 0 {
		return false
	}
	want, declared := f.props[key]
	if !declared {
		return !f.closed
	}
	return kind == want || (want == 'n' && kind == 'i')
}

// scanner reads the JSON the fast path understands; any doubt is a failure.
type scanner struct {
	s string
	i int
}

func (p *scanner) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *scanner) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// key reads a string without escapes or control characters.
func (p *scanner) key() (string, bool) {
	if !p.eat('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return p.s[start : p.i-1], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return "", false // escapes and non-ASCII keys: the validator decides
		}
		p.i++
	}
	return "", false
}

// value reads one scalar and says what it was: 's' string, 'i' integer, 'n' other
// number, 'b' boolean; 0 for null, objects, arrays and anything malformed.
func (p *scanner) value() byte {
	if p.i >= len(p.s) {
		return 0
	}
	switch c := p.s[p.i]; {
	case c == '"':
		return p.str()
	case c == 't':
		return p.word("true")
	case c == 'f':
		return p.word("false")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	return 0
}

func (p *scanner) word(w string) byte {
	if len(p.s)-p.i >= len(w) && p.s[p.i:p.i+len(w)] == w {
		p.i += len(w)
		return 'b'
	}
	return 0
}

// str reads a string: ASCII without escapes or control characters, else (escapes,
// UTF-8) leave it to the validator, which decodes exactly.
func (p *scanner) str() byte {
	p.i++
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return 's'
		case c == '\\' || c < 0x20 || c >= 0x80:
			return 0
		}
		p.i++
	}
	return 0
}

// number reads a JSON number: 'i' when it has neither fraction nor exponent.
func (p *scanner) number() byte {
	p.eat('-')
	switch {
	case p.eat('0'):
	case p.i < len(p.s) && p.s[p.i] >= '1' && p.s[p.i] <= '9':
		p.digits()
	default:
		return 0
	}
	kind := byte('i')
	if p.eat('.') {
		kind = 'n'
		if p.digits() == 0 {
			return 0
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		kind = 'n' // 1e2 is an integer to JSON Schema; the validator says so
		p.i++
		if !p.eat('+') {
			p.eat('-')
		}
		if p.digits() == 0 {
			return 0
		}
	}
	return kind
}

func (p *scanner) digits() int {
	n := 0
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
		n++
	}
	return n
}
