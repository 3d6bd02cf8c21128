package loop

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// fallbackTools: primary fails with an error (or answers with an error result when
// answer is set); backup echoes its arguments.
func fallbackTools(t *testing.T, answer bool) *ToolSet {
	primary := FuncTool{ToolSpec: ToolSpec{Name: "primary"}, Fn: func(_ context.Context, c ToolCall) (ToolResult, error) {
		if answer {
			return ErrorResult("no such city"), nil
		}
		return ToolResult{}, errors.New("service unavailable")
	}}
	backup := FuncTool{ToolSpec: ToolSpec{Name: "backup"}, Fn: func(_ context.Context, c ToolCall) (ToolResult, error) {
		return TextResult("backup got " + c.Arguments), nil
	}}
	return tools(t, primary, backup)
}

// A call whose tool fails is made again on its fallback with the same arguments,
// through the pipeline (its own tool_call naming the failed call, its own tool_result);
// the failed call's tool_result names the fallback and carries its result, which is
// what the model gets. A tool's own error answer is not a failure: no fallback.
func TestAFailedToolCallFallsBackToTheNextToolWithTheSameArguments(t *testing.T) {
	m := script(turn{calls: []ToolCall{call("c1", "primary", `{"q":"x"}`)}}, turn{text: "done"})
	a := newAgent(t, Config{Model: m, Tools: fallbackTools(t, false), ToolFallbacks: map[string][]ToolFallback{"primary": {{Tool: "backup"}}}})
	_, evs := runCollect(t, a, userIn("s", "go"))
	calls := eventsOf[ToolCallData](evs)
	if len(calls) != 2 || calls[1].ID != "c1~backup" || calls[1].Name != "backup" || calls[1].FallbackFor != "c1" || string(calls[1].Arguments) != `{"q":"x"}` {
		t.Fatalf("calls %+v", calls)
	}
	results := eventsOf[ToolResultData](evs)
	if len(results) != 2 || results[0].ID != "c1~backup" || results[0].IsError ||
		results[1].ID != "c1" || results[1].Fallback != "backup" || results[1].IsError || results[1].Content != `backup got {"q":"x"}` {
		t.Fatalf("results %+v", results)
	}
	equal(t, "history", history(t, a, "s"), []string{"user:go", `assistant: primary({"q":"x"})`, `tool[c1]:backup got {"q":"x"}`, "assistant:done"})

	m = script(turn{calls: []ToolCall{call("c1", "primary", `{}`)}}, turn{text: "done"})
	a = newAgent(t, Config{Model: m, Tools: fallbackTools(t, true), ToolFallbacks: map[string][]ToolFallback{"primary": {{Tool: "backup"}}}})
	_, evs = runCollect(t, a, userIn("s", "go"))
	if r := eventsOf[ToolResultData](evs); len(r) != 1 || r[0].Fallback != "" || r[0].Content != "no such city" {
		t.Fatalf("an error answer fell back: %+v", r)
	}
}

// A fallback call is admitted like any call: a fallback that needs an approval nobody
// gives is rejected (its own tool_result says so) and the original failure stands.
func TestAFallbackCallGoesThroughApprovalLikeAnyCall(t *testing.T) {
	m := script(turn{calls: []ToolCall{call("c1", "primary", `{}`)}}, turn{text: "done"})
	a := newAgent(t, Config{Model: m, Tools: fallbackTools(t, false), ToolFallbacks: map[string][]ToolFallback{"primary": {{Tool: "backup"}}},
		ToolPolicy: ToolPolicy{RequireApproval: []string{"backup"}}})
	_, evs := runCollect(t, a, userIn("s", "go"))
	r := eventsOf[ToolResultData](evs)
	if len(r) != 2 || r[0].ID != "c1~backup" || r[0].Refused != RefusedRejected ||
		r[1].ID != "c1" || r[1].Fallback != "" || !r[1].IsError || !strings.Contains(r[1].Content, "service unavailable") {
		t.Fatalf("results %+v", r)
	}
}

// A fallback with an argument mapping gets the arguments the mapping makes of the
// failed call's (its names from the failed call's, an absent one left out, the others
// not passed on), through the pipeline like any call. Arguments that are no JSON object
// cannot be mapped: that fallback is announced and refused, and the failure stands.
func TestAFallbackWithAnArgumentMappingGetsTheMappedArguments(t *testing.T) {
	mapped := map[string][]ToolFallback{"primary": {{Tool: "backup", Arguments: map[string]string{"q": "query", "n": "limit", "z": "absent"}}}}
	m := script(turn{calls: []ToolCall{call("c1", "primary", `{"query":"x","limit":3,"extra":true}`)}}, turn{text: "done"})
	a := newAgent(t, Config{Model: m, Tools: fallbackTools(t, false), ToolFallbacks: mapped})
	_, evs := runCollect(t, a, userIn("s", "go"))
	calls := eventsOf[ToolCallData](evs)
	if len(calls) != 2 || calls[1].ID != "c1~backup" || string(calls[1].Arguments) != `{"n":3,"q":"x"}` {
		t.Fatalf("calls %+v", calls)
	}
	if r := eventsOf[ToolResultData](evs); len(r) != 2 || r[1].Fallback != "backup" || r[1].Content != `backup got {"n":3,"q":"x"}` {
		t.Fatalf("results %+v", r)
	}

	m = script(turn{calls: []ToolCall{call("c1", "primary", `[1]`)}}, turn{text: "done"})
	a = newAgent(t, Config{Model: m, Tools: fallbackTools(t, false), ToolFallbacks: mapped})
	_, evs = runCollect(t, a, userIn("s", "go"))
	r := eventsOf[ToolResultData](evs)
	if len(r) != 2 || r[0].ID != "c1~backup" || !strings.Contains(r[0].Content, "not a JSON object") ||
		r[1].Fallback != "" || !strings.Contains(r[1].Content, "service unavailable") {
		t.Fatalf("unmappable arguments: %+v", r)
	}
}
