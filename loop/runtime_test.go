package loop

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

// hintsStrategy records the hints each build sees and changes nothing.
type hintsStrategy struct{ seen []map[string]string }

func (*hintsStrategy) Name() string { return "hints" }
func (s *hintsStrategy) Build(_ context.Context, in ContextInput) (ContextOutput, error) {
	s.seen = append(s.seen, in.Hints)
	return ContextOutput{}, nil
}

// Before the first model call the loop prepares each runtime one of whose tools the run
// offers, with the run's init data for it and its hints, and reports it (a runtime
// event); one whose tools are not offered is not prepared. A runtime that fails leaves
// its tools unavailable for the run: a call of one is refused as failed, without the
// tool running, and its fallback stands in. Tools and strategies see the run's hints.
func TestToolRuntimesArePreparedBeforeTheLoopWithTheRunsInitDataAndHints(t *testing.T) {
	var order []string
	var gotInit json.RawMessage
	var prepHints map[string]string
	ran := map[string]int{}
	mk := func(name string) Tool {
		return FuncTool{ToolSpec: ToolSpec{Name: name}, Fn: func(ctx context.Context, c ToolCall) (ToolResult, error) {
			ran[name]++
			order = append(order, "call "+name)
			return TextResult(name + " in " + RuntimeHints(ctx)["region"]), nil
		}}
	}
	rts := []Runtime{
		{Name: "warm", Tools: []string{"a"}, Prepare: func(ctx context.Context, init json.RawMessage) error {
			order, gotInit, prepHints = append(order, "prepare warm"), init, RuntimeHints(ctx)
			return nil
		}},
		{Name: "unused", Tools: []string{"z"}, Prepare: func(context.Context, json.RawMessage) error {
			order = append(order, "prepare unused")
			return nil
		}},
		{Name: "broken", Tools: []string{"b"}, Prepare: func(context.Context, json.RawMessage) error {
			order = append(order, "prepare broken")
			return errors.New("server did not start")
		}},
	}
	m := script(turn{calls: []ToolCall{call("c1", "a", `{}`), call("c2", "b", `{}`)}}, turn{text: "done"})
	strat := &hintsStrategy{}
	a := newAgent(t, Config{Model: m, Tools: tools(t, mk("a"), mk("b"), mk("z")), Runtimes: rts, Context: []ContextStrategy{strat, DefaultContext{}},
		ToolFallbacks: map[string][]ToolFallback{"b": {{Tool: "a"}}}})
	in := userIn("s", "go")
	in.AllowedTools = []string{"a", "b"}
	in.RuntimeInit = map[string]json.RawMessage{"warm": json.RawMessage(`{"token":"t1"}`)}
	in.RuntimeHints = map[string]string{"region": "eu"}
	res, evs := runCollect(t, a, in)
	if res.Status != StatusCompleted {
		t.Fatalf("run %s %s %v", res.Status, res.Reason, res.Err)
	}
	equal(t, "order", order, []string{"prepare warm", "prepare broken", "call a", "call a"})
	if string(gotInit) != `{"token":"t1"}` || prepHints["region"] != "eu" || ran["b"] != 0 || ran["z"] != 0 {
		t.Fatalf("init %s, hints %v, ran %v", gotInit, prepHints, ran)
	}
	rt := eventsOf[RuntimeData](evs)
	if len(rt) != 2 || rt[0].Name != "warm" || !rt[0].Ready || rt[1].Name != "broken" || rt[1].Ready || rt[1].Error != "server did not start" {
		t.Fatalf("runtime events %+v", rt)
	}
	r := eventsOf[ToolResultData](evs)
	if len(r) != 3 || r[0].Content != "a in eu" || r[1].ID != "c2~a" || r[2].ID != "c2" || r[2].Fallback != "a" {
		t.Fatalf("results %+v", r)
	}
	if len(strat.seen) == 0 || strat.seen[0]["region"] != "eu" {
		t.Fatalf("the strategy saw hints %v", strat.seen)
	}

	// Without a fallback the refused call's result names the runtime and why.
	m = script(turn{calls: []ToolCall{call("c1", "b", `{}`)}}, turn{text: "done"})
	a = newAgent(t, Config{Model: m, Tools: tools(t, mk("b")), Runtimes: rts[2:]})
	_, evs = runCollect(t, a, userIn("s", "go"))
	if r := eventsOf[ToolResultData](evs); len(r) != 1 || !r[0].IsError ||
		r[0].Content != "Error: tool 'b' is unavailable in this run: its runtime 'broken' could not be prepared: server did not start" {
		t.Fatalf("results %+v", r)
	}

	// Tools off: nothing is offered, nothing prepared.
	order = nil
	m = script(turn{text: "done"})
	a = newAgent(t, Config{Model: m, Tools: tools(t, mk("a")), Runtimes: rts[:1]})
	in = userIn("s", "go")
	in.ToolsOff = true
	if _, evs = runCollect(t, a, in); len(order) != 0 || len(eventsOf[RuntimeData](evs)) != 0 {
		t.Fatalf("tools off prepared %v", order)
	}

	// A Prepare that panics is a runtime that failed, not a failed run.
	m = script(turn{text: "done"})
	a = newAgent(t, Config{Model: m, Tools: tools(t, mk("a")), Runtimes: []Runtime{{Name: "p", Tools: []string{"a"}, Prepare: func(context.Context, json.RawMessage) error { panic("boom") }}}})
	res, evs = runCollect(t, a, userIn("s", "go"))
	if rt := eventsOf[RuntimeData](evs); res.Status != StatusCompleted || len(rt) != 1 || rt[0].Ready || rt[0].Error != "panicked: boom" {
		t.Fatalf("a panicking Prepare: %s %+v", res.Status, rt)
	}
}
