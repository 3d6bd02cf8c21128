package loop

import (
	"encoding/json"
	"testing"
)

var fastSchemas = []string{
	`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`,
	`{"type":"object","properties":{"text":{"type":"string","description":"t"},"n":{"type":"integer"},"ok":{"type":"boolean"}},"required":["text"],"additionalProperties":false}`,
	`{"type":"object","properties":{}}`,
}

var fastDocs = []string{
	`{"a":1,"b":2}`, `{"a":1.5,"b":-0}`, `{"a":1}`, `{"a":"1","b":2}`, `{"a":1,"b":2,"c":[1]}`, `{"a":1,"a":2,"b":3}`,
	`{"a":1e2,"b":2}`, `{"a":01,"b":2}`, `{"a":1,"b":2} x`, ` { "a" : 1 , "b" : 2 } `, `{"a":1,"b":2,}`, `{"a":-,"b":2}`,
	`{"text":"hi"}`, `{"text":"h\"i"}`, `{"text":"héllo"}`, `{"text":"hi","n":3}`, `{"text":"hi","n":3.0}`, `{"text":"hi","n":3.5}`,
	`{"text":"hi","n":1e1}`, `{"text":"hi","ok":true}`, `{"text":"hi","ok":"true"}`, `{"text":"hi","extra":1}`, `{"text":null}`,
	`{"text":"hi","ok":tru}`, `{}`, `[]`, `null`, `"x"`, ``, `{"te\u0078t":"hi"}`, `{"text":"a\u0000"}`, "{\"text\":\"\x01\"}",
	`{"text":"hi"`, `{"text"`, `{`,
}

// The fast path only ever says yes where the validator says yes: every document it
// accepts, the full validator accepts too (the rest goes to the validator anyway).
func TestFastSchemaAgreesWithTheValidator(t *testing.T) {
	accepted := 0
	for _, raw := range fastSchemas {
		s, err := compileSchema("t", []byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if s.flat == nil {
			t.Fatalf("%s was not recognised as flat", raw)
		}
		full := &argsSchema{schema: s.schema}
		for _, doc := range fastDocs {
			if s.flat.accepts(doc) {
				accepted++
				if err := full.validate(doc); err != nil {
					t.Errorf("schema %s: the fast path accepted %q, the validator says %v", raw, doc, err)
				}
			}
		}
	}
	if accepted < 8 {
		t.Fatalf("the fast path accepted only %d documents: it is not being used", accepted)
	}
}

// What the fast path accepts is JSON: a tool's arguments it accepts are not scanned
// again by json.Valid (toolEntry.validate), so it must never accept anything else.
func TestFastSchemaAcceptsOnlyJSON(t *testing.T) {
	docs := append([]string{`{"a":1,"b":2}garbage`, `{"a":1,"b":2}}`, `{"a":1 "b":2}`, `{"a":1,"b":2`,
		`{"a":+1,"b":2}`, `{"a":1.,"b":2}`, `{"a":.5,"b":2}`, `{"a":1e,"b":2}`, `{"a":0x1,"b":2}`, "{\"a\":1,\"b\":2}\x00"}, fastDocs...)
	accepted := 0
	for _, raw := range fastSchemas {
		s, err := compileSchema("t", []byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range docs {
			if s.flat.accepts(doc) {
				accepted++
				if !json.Valid([]byte(doc)) {
					t.Errorf("schema %s: the fast path accepted %q, which is not JSON", raw, doc)
				}
			}
		}
	}
	if accepted < 8 {
		t.Fatalf("the fast path accepted only %d documents: it is not being used", accepted)
	}
}

// Schemas with anything the fast path does not check are left to the validator whole.
func TestFastSchemaLeavesOtherSchemasAlone(t *testing.T) {
	for _, raw := range []string{
		`{"type":"object","properties":{"a":{"type":"number","minimum":0}}}`,
		`{"type":"object","properties":{"a":{"enum":["x"]}}}`,
		`{"type":"object","properties":{"a":{"type":["string","null"]}}}`,
		`{"type":"object","properties":{"a":{"type":"object"}}}`,
		`{"type":"object","properties":{"a":{"type":"string"}},"required":["b"]}`,
		`{"properties":{"a":{"type":"string"}}}`,
		`{"type":"object","additionalProperties":{"type":"string"}}`,
		`{"type":"object","$defs":{}}`,
	} {
		if flatSchemaOf([]byte(raw)) != nil {
			t.Errorf("%s was taken as flat", raw)
		}
	}
}

func FuzzFastSchema(f *testing.F) {
	for _, d := range fastDocs {
		f.Add(d)
	}
	schemas := make([]*argsSchema, len(fastSchemas))
	for i, raw := range fastSchemas {
		s, err := compileSchema("t", []byte(raw))
		if err != nil {
			f.Fatal(err)
		}
		schemas[i] = s
	}
	f.Fuzz(func(t *testing.T, doc string) {
		for _, s := range schemas {
			if s.flat.accepts(doc) {
				if err := (&argsSchema{schema: s.schema}).validate(doc); err != nil {
					t.Fatalf("fast path accepted %q, validator: %v", doc, err)
				}
			}
		}
	})
}

// FuzzFastSchemaAcceptsOnlyJSON: no document the fast path accepts is anything but JSON
// (TestFastSchemaAcceptsOnlyJSON says why it matters).
func FuzzFastSchemaAcceptsOnlyJSON(f *testing.F) {
	for _, d := range fastDocs {
		f.Add(d)
	}
	flats := make([]*flatSchema, len(fastSchemas))
	for i, raw := range fastSchemas {
		flats[i] = flatSchemaOf([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, doc string) {
		for _, fl := range flats {
			if fl.accepts(doc) && !json.Valid([]byte(doc)) {
				t.Fatalf("the fast path accepted %q, which is not JSON", doc)
			}
		}
	})
}
