package js

import (
	"strings"
	"testing"
)

// streamResult(text) hands each piece to the host as it comes, in order; an empty
// piece sends nothing; the handler's value is the call's result, whole. A lone
// surrogate (a string JavaScript can hold and UTF-8 cannot) arrives as U+FFFD; a value
// that is not a string is a TypeError, not "[object Object]"; and at the bundle's top
// level, where no call is being served, it throws.
func TestStreamResultSendsEachPieceToTheHostAndTheValueStaysTheResult(t *testing.T) {
	e := load(t, `const { tool, streamResult } = require("agenthost");
tool({name: "scan", async handler(a) {
  const hits = a.text.split(" ");
  for (const h of hits) { streamResult(h + "\n"); }
  streamResult("");
  return hits.join("\n") + "\n";
}});
tool({name: "lone", handler() { streamResult("a\uD800b"); return "done"; }});
tool({name: "object", handler() { streamResult({text: "x"}); return "not reached"; }});`)
	h := &memHost{}
	r := call(e, h, "scan", `{"text":"a1 b22 c333"}`)
	if r.IsError || text(r) != "a1\nb22\nc333\n" || strings.Join(h.pieces, "|") != "a1\n|b22\n|c333\n" {
		t.Fatalf("scan = %+v, pieces %q", r, h.pieces)
	}
	h.pieces = nil
	if r := call(e, h, "lone", `{}`); r.IsError || text(r) != "done" || len(h.pieces) != 1 || h.pieces[0] != "a\uFFFDb" {
		t.Fatalf("lone surrogate: %+v, pieces %q", r, h.pieces)
	}
	h.pieces = nil
	if r := call(e, h, "object", `{}`); !r.IsError || !strings.Contains(text(r), "TypeError: streamResult(text): text must be a string") || len(h.pieces) != 0 {
		t.Fatalf("object = %+v, pieces %q", r, h.pieces)
	}
	if _, err := Load("t.js", `require("agenthost").streamResult("early");`); err == nil ||
		!strings.Contains(err.Error(), "streamResult: host functions are available in handlers only") {
		t.Fatalf("at load: %v", err)
	}
}
