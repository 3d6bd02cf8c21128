package loop

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
)

// infoHook records the CallInfo its context carries at each step.
type infoHook struct {
	mu   sync.Mutex
	seen []CallInfo
}

func (h *infoHook) Name() string { return "info" }
func (h *infoHook) OnStep(ctx context.Context, _ StepInfo) (Decision, error) {
	info, _ := CallInfoFrom(ctx)
	h.mu.Lock()
	h.seen = append(h.seen, info)
	h.mu.Unlock()
	return Decision{}, nil
}
func (h *infoHook) BeforeFinal(context.Context, FinalInfo) (Decision, error) { return Decision{}, nil }

// Every tool call and every hook learns which session and run it serves (CallInfo):
// the host keys plugin instances by session with it (isolation "session").
func TestCallInfoReachesToolsAndHooks(t *testing.T) {
	var toolInfo CallInfo
	probe := FuncTool{ToolSpec: ToolSpec{Name: "probe"}, Fn: func(ctx context.Context, c ToolCall) (ToolResult, error) {
		toolInfo, _ = CallInfoFrom(ctx)
		return TextResult("ok"), nil
	}}
	hook := &infoHook{}
	a := newAgent(t, Config{Name: "ag", Model: script(turn{calls: []ToolCall{call("c1", "probe", `{}`)}}, turn{text: "done"}),
		Tools: tools(t, probe), Hooks: []TerminationHook{hook}})
	in := userIn("s-info", "go")
	in.RunID = "r-info"
	if res, _ := runCollect(t, a, in); res.Status != StatusCompleted {
		t.Fatalf("status %s: %v", res.Status, res.Err)
	}
	if want := (CallInfo{SessionID: "s-info", RunID: "r-info", Agent: "ag", CallID: "c1"}); toolInfo != want {
		t.Fatalf("tool saw %+v, want %+v", toolInfo, want)
	}
	if len(hook.seen) == 0 {
		t.Fatal("hook never called")
	}
	for _, info := range hook.seen {
		if want := (CallInfo{SessionID: "s-info", RunID: "r-info", Agent: "ag"}); info != want {
			t.Fatalf("hook saw %+v, want %+v", info, want)
		}
	}
}

// WithCallInfo's context reads back with CallInfoFrom (a host calling a tool outside a
// run); a run started under such a context serves its own CallInfo instead (the run's
// context answers for it, runctx.go), and its tool calls add their id.
func TestCallInfoFromReadsWithCallInfoAndARunsOwn(t *testing.T) {
	if _, ok := CallInfoFrom(context.Background()); ok {
		t.Fatal("a bare context has a CallInfo")
	}
	outer := CallInfo{SessionID: "s-out", RunID: "r-out", Agent: "host", CallID: "c-out", User: "ann"}
	ctx := WithCallInfo(context.Background(), outer)
	if got, ok := CallInfoFrom(ctx); !ok || got != outer {
		t.Fatalf("CallInfoFrom(WithCallInfo) = %+v %v, want %+v", got, ok, outer)
	}
	var inTool CallInfo
	probe := FuncTool{ToolSpec: ToolSpec{Name: "probe"}, Fn: func(ctx context.Context, c ToolCall) (ToolResult, error) {
		inTool, _ = CallInfoFrom(ctx)
		return TextResult("ok"), nil
	}}
	hook := &infoHook{}
	a := newAgent(t, Config{Name: "ag", Model: script(turn{calls: []ToolCall{call("c1", "probe", `{}`)}}, turn{text: "done"}),
		Tools: tools(t, probe), Hooks: []TerminationHook{hook}})
	in := userIn("s-in", "go")
	in.RunID, in.User = "r-in", "bob"
	if res, err := a.RunWith(ctx, in, nil); err != nil || res.Status != StatusCompleted {
		t.Fatalf("run: %v %s", err, res.Status)
	}
	if want := (CallInfo{SessionID: "s-in", RunID: "r-in", Agent: "ag", CallID: "c1", User: "bob"}); inTool != want {
		t.Fatalf("tool saw %+v, want %+v", inTool, want)
	}
	if want := (CallInfo{SessionID: "s-in", RunID: "r-in", Agent: "ag", User: "bob"}); len(hook.seen) == 0 || hook.seen[0] != want {
		t.Fatalf("hook saw %+v, want %+v", hook.seen, want)
	}
	if got, _ := CallInfoFrom(ctx); got != outer {
		t.Fatalf("the caller's context changed: %+v", got)
	}
}

// L7: a done tool's structured result is the run's output, beside its final text.
func TestL7_DoneToolStructuredResultIsTheOutput(t *testing.T) {
	done := FuncTool{ToolSpec: ToolSpec{Name: "done"}, Fn: func(context.Context, ToolCall) (ToolResult, error) {
		return ToolResult{Content: []Part{TextPart("answered")}, Done: true, Final: "42", Structured: json.RawMessage(`{"answer":42}`)}, nil
	}}
	a := newAgent(t, Config{Model: script(turn{calls: []ToolCall{call("c1", "done", `{}`)}}), Tools: tools(t, done)})
	res, evs := runCollect(t, a, userIn("s-done", "go"))
	if res.Status != StatusCompleted || res.Reason != ReasonDoneTool || string(res.Output) != `{"answer":42}` {
		t.Fatalf("result %s/%s output %s", res.Status, res.Reason, res.Output)
	}
	finals := eventsOf[FinalData](evs)
	if len(finals) != 1 || finals[0].Text != "42" || string(finals[0].Output) != `{"answer":42}` {
		t.Fatalf("final events %+v", finals)
	}
}
