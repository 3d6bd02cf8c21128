package loop

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
)

// countingTool counts its calls, so a test can prove a call never ran.
func countingTool(n *atomic.Int32) Tool {
	return FuncTool{ToolSpec: ToolSpec{Name: "search"}, Fn: func(_ context.Context, c ToolCall) (ToolResult, error) {
		n.Add(1)
		return TextResult("found: " + c.Arguments), nil
	}}
}

func TestL15_TruncatedToolCallIsNotExecuted(t *testing.T) {
	var ran atomic.Int32
	m := script(
		turn{calls: []ToolCall{call("c1", "search", `{"q":"abc`)}, stop: "max_tokens"},
		turn{calls: []ToolCall{call("c2", "search", `{"q":"abc"}`)}},
		turn{text: "found it"},
	)
	a := newAgent(t, Config{Model: m, Tools: tools(t, countingTool(&ran))})
	res, evs := runCollect(t, a, userIn("s1", "look up abc"))
	if res.Status != StatusCompleted || res.Reason != ReasonEndTurn || res.StopReason != StopEndTurn {
		t.Fatalf("result %s/%s stop %s, err %v", res.Status, res.Reason, res.StopReason, res.Err)
	}
	if ran.Load() != 1 {
		t.Fatalf("search ran %d times, want 1 (the truncated call must not run)", ran.Load())
	}
	equal(t, "events", kinds(evs), []string{
		"run_started", "status:preparing", "status:model_running", "assistant_message", "usage",
		"assistant_message", "usage",
		"status:tool_running", "step_start:search", "tool_call:search", "tool_result:search", "step_complete:ok",
		"status:model_running", "assistant_message", "usage", "final", "status:completed", "run_finished:completed/end_turn",
	})
	stops := []StopReason{}
	for _, d := range eventsOf[AssistantMessageData](evs) {
		stops = append(stops, d.StopReason)
	}
	equal(t, "stop reasons", stops, []StopReason{StopMaxTokens, StopToolUse, StopEndTurn})
	fin := eventsOf[RunFinishedData](evs)
	if fin[0].StopReason != StopEndTurn {
		t.Fatalf("run_finished stop_reason %q", fin[0].StopReason)
	}
	equal(t, "history", history(t, a, "s1"), []string{
		"user:look up abc",
		`assistant: search({"q":"abc)`,
		"tool[c1]:" + truncMessage,
		`assistant: search({"q":"abc"})`,
		`tool[c2]:found: {"q":"abc"}`,
		"assistant:found it",
	})
}

func TestL15_TruncatedToolCallsRetryBoundedThenIncomplete(t *testing.T) {
	var ran atomic.Int32
	cut := turn{calls: []ToolCall{call("", "search", `{"q":`)}, stop: "max_tokens"}
	m := script(cut, cut, cut, turn{text: "never asked"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, countingTool(&ran)), MaxTruncationRetries: 2})
	res, evs := runCollect(t, a, userIn("s1", "go"))
	if res.Status != StatusIncomplete || res.Reason != ReasonMaxTokens || res.Final != nil {
		t.Fatalf("result %s/%s final %v", res.Status, res.Reason, res.Final)
	}
	if ran.Load() != 0 || len(m.requests()) != 3 {
		t.Fatalf("ran %d, model calls %d; want 0 and 3", ran.Load(), len(m.requests()))
	}
	k := kinds(evs)
	equal(t, "end", k[len(k)-2:], []string{"status:completed", "run_finished:incomplete/max_tokens"})
	h := history(t, a, "s1")
	if len(h) != 7 || !strings.HasPrefix(h[6], "tool[call_3_0]:Error: tool call not executed") {
		t.Fatalf("history %q", h)
	}
}

func TestL15_TruncatedFinalTextEndsIncomplete(t *testing.T) {
	m := script(turn{text: "The answer is", stop: "max_tokens"})
	a := newAgent(t, Config{Model: m})
	res, evs := runCollect(t, a, userIn("s1", "q"))
	if res.Status != StatusIncomplete || res.Reason != ReasonMaxTokens || res.Final.Text() != "The answer is" {
		t.Fatalf("result %s/%s final %v", res.Status, res.Reason, res.Final)
	}
	equal(t, "events", kinds(evs), []string{"run_started", "status:preparing", "status:model_running",
		"assistant_message", "usage", "final", "status:completed", "run_finished:incomplete/max_tokens"})
	if d := eventsOf[RunFinishedData](evs)[0]; d.StopReason != StopMaxTokens {
		t.Fatalf("run_finished stop_reason %q", d.StopReason)
	}
}

func TestL15_ContinueOnMaxTokensJoinsTheParts(t *testing.T) {
	m := script(turn{text: "The answer ", stop: "max_tokens"}, turn{text: "is 42."})
	a := newAgent(t, Config{Model: m})
	in := userIn("s1", "q")
	in.ContinueOnMaxTokens = true
	res, _ := runCollect(t, a, in)
	if res.Status != StatusCompleted || res.Reason != ReasonEndTurn || res.Final.Text() != "The answer is 42." {
		t.Fatalf("result %s/%s final %v", res.Status, res.Reason, res.Final)
	}
	equal(t, "history", history(t, a, "s1"), []string{"user:q", "assistant:The answer ",
		"user:" + continueMessage, "assistant:is 42."})
}

func TestL15_ContentFilterFailsAndRunsNothing(t *testing.T) {
	var ran atomic.Int32
	m := script(turn{calls: []ToolCall{call("c1", "search", `{}`)}, stop: "content_filter"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, countingTool(&ran))})
	res, evs := runCollect(t, a, userIn("s1", "q"))
	if res.Status != StatusFailed || res.Reason != ReasonContentFilter || res.Err == nil || ran.Load() != 0 {
		t.Fatalf("result %s/%s err %v ran %d", res.Status, res.Reason, res.Err, ran.Load())
	}
	equal(t, "events", kinds(evs), []string{"run_started", "status:preparing", "status:model_running",
		"assistant_message", "usage", "error:content_filter", "status:failed", "run_finished:failed/content_filter"})
	equal(t, "history", history(t, a, "s1"), []string{"user:q", "assistant: search({})",
		"tool[c1]:Error: tool call not executed: the run stopped (content_filter)"})
}

func TestL15_UnknownStopReasonIsOther(t *testing.T) {
	for in, want := range map[string]StopReason{"": StopEndTurn, "end_turn": StopEndTurn, "length": StopOther, "other": StopOther} {
		if got := normaliseStop(in, false); got != want {
			t.Errorf("normaliseStop(%q) = %q, want %q", in, got, want)
		}
	}
	if got := normaliseStop("", true); got != StopToolUse {
		t.Errorf("normaliseStop(\"\", calls) = %q", got)
	}
}
