package sdk

import (
	"encoding/json"
	"testing"
)

type schemaInner struct {
	N int `json:"n"`
}

type schemaArgs struct {
	Text     string          `json:"text" description:"the text"`
	Count    int             `json:"count,omitempty"`
	Ratio    float64         `json:"ratio"`
	Flag     *bool           `json:"flag"`
	Tags     []string        `json:"tags,omitempty"`
	Labels   map[string]int  `json:"labels,omitempty"`
	Inner    schemaInner     `json:"inner"`
	Any      json.RawMessage `json:"any,omitempty"`
	Skipped  string          `json:"-"`
	unexport string          //lint:ignore U1000 an unexported field the schema must leave out
	Plain    bool
	Nested   []map[string]bool `json:"nested,omitempty"`
}

func TestSchemaOf(t *testing.T) {
	got, err := SchemaOf(schemaArgs{})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"type":"object","properties":{` +
		`"text":{"description":"the text","type":"string"},` +
		`"count":{"type":"integer"},` +
		`"ratio":{"type":"number"},` +
		`"flag":{"type":"boolean"},` +
		`"tags":{"type":"array","items":{"type":"string"}},` +
		`"labels":{"type":"object","additionalProperties":{"type":"integer"}},` +
		`"inner":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]},` +
		`"any":{},` +
		`"Plain":{"type":"boolean"},` +
		`"nested":{"type":"array","items":{"type":"object","additionalProperties":{"type":"boolean"}}}` +
		`},"required":["text","ratio","inner","Plain"]}`
	if string(got) != want {
		t.Fatalf("SchemaOf:\n got %s\nwant %s", got, want)
	}
	if !json.Valid(got) {
		t.Fatal("schema is not valid JSON")
	}
}

func TestSchemaOfRejects(t *testing.T) {
	if _, err := SchemaOf(42); err == nil || err.Error() != "schema of int: arguments must be a struct" {
		t.Fatalf("SchemaOf(42) error = %v", err)
	}
	type withChan struct {
		C chan int `json:"c"`
	}
	_, err := SchemaOf(withChan{})
	if err == nil || err.Error() != "schema of sdk.withChan: field C: unsupported type chan int" {
		t.Fatalf("SchemaOf(chan) error = %v", err)
	}
	type empty struct{}
	got, _ := SchemaOf(&empty{})
	if string(got) != `{"type":"object","properties":{}}` {
		t.Fatalf("SchemaOf(empty) = %s", got)
	}
}
