package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

func TestTermTextRendersControlsVisiblyAndKeepsText(t *testing.T) {
	for in, want := range map[string]string{
		"plain\ttext\nnext, ünï ✓ \uFFFD": "plain\ttext\nnext, ünï ✓ \uFFFD",
		"\x1b]52;c;aGk=\x07":              `\x1b]52;c;aGk=\x07`,
		"a\r\nb\rc\x00\x7f":               `a` + "\n" + `b\x0dc\x00\u007f`,
		"\u009b2J \u202e \u2069 \u200f":   `\u009b2J \u202e \u2069 \u200f`,
		"bad \xff\xfe utf8":               `bad \xff\xfe utf8`,
	} {
		if got := termText(in); got != want {
			t.Errorf("termText(%q) = %q, want %q", in, got, want)
		}
	}
}

// A write that splits a rune or a CRLF renders as one write would: the tail waits.
func TestSafeWriterJoinsRunesAndCRLFSplitAcrossWrites(t *testing.T) {
	var b bytes.Buffer
	w := newSafeWriter(&b)
	text := "x\u202ey é\r\nz\x1b"
	for i := range len(text) {
		if n, err := w.Write([]byte{text[i]}); n != 1 || err != nil {
			t.Fatalf("write: %d %v", n, err)
		}
	}
	if want := `x\u202ey é` + "\n" + `z\x1b`; b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}
}

// JSON written through it decodes to the same values: --json stays exact.
func TestSafeWriterKeepsJSONValues(t *testing.T) {
	in := map[string]string{"t": "\x1b[2J\u202e\u009b\x7f\r\n\u2066ok"}
	var b bytes.Buffer
	if err := json.NewEncoder(newSafeWriter(&b)).Encode(in); err != nil {
		t.Fatal(err)
	}
	var out map[string]string
	if err := json.Unmarshal(b.Bytes(), &out); err != nil || out["t"] != in["t"] {
		t.Fatalf("%q decodes to %q (%v)", b.String(), out["t"], err)
	}
	if strings.ContainsAny(b.String(), "\x1b\u202e\u009b\x7f\r\u2066") {
		t.Fatalf("raw controls in %q", b.String())
	}
}

// The transcript's copy is cleaned; the event the store and other consumers share is not.
func TestCleanValueCopiesAndLeavesTheEventAsItWas(t *testing.T) {
	d := &loop.ToolCallData{ID: "c\x1b", Name: "n\u202e", Arguments: []byte("{\"a\":\"\x07\"}")}
	var data any = d
	got := cleanValue(data).(*loop.ToolCallData)
	if got == d || got.ID != `c\x1b` || got.Name != `n\u202e` || string(got.Arguments) != `{"a":"\x07"}` {
		t.Fatalf("cleaned %+v", got)
	}
	if d.ID != "c\x1b" || string(d.Arguments) != "{\"a\":\"\x07\"}" {
		t.Fatalf("the original changed: %+v", d)
	}
}
