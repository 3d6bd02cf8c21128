package loop

import "testing"

func TestCounters_DuplicatesAreCanonicalAndCapsCountTheOffender(t *testing.T) {
	var c counters
	p := ToolPolicy{MaxDuplicateCalls: 2, MaxCallsPerTool: 4}
	if i, r := c.check([]ToolCall{call("1", "f", `{"a":1,"b":2}`), call("2", "f", `{"b":2, "a":1}`)}, p); i != -1 {
		t.Fatalf("two equal calls are allowed, got %d %s", i, r)
	}
	if i, r := c.check([]ToolCall{call("3", "g", `{}`), call("4", "f", `{ "a":1,"b":2 }`)}, p); i != 1 || r != ReasonDuplicateCall {
		t.Fatalf("third equal call: %d %s", i, r)
	}
	if c.toolCalls != 4 || len(c.perTool) != 2 || c.perTool[0].name != "f" || c.perTool[0].n != 3 {
		t.Fatalf("counts %d %v", c.toolCalls, c.perTool)
	}
	if i, r := c.check([]ToolCall{call("5", "f", `{"x":1}`), call("6", "f", `{"x":2}`)}, p); i != 1 || r != ReasonToolCallLimit {
		t.Fatalf("fifth f call: %d %s", i, r)
	}
}
