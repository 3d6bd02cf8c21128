package loop

import (
	"encoding/json"
	"sync/atomic"
	"testing"
)

var pickColor = ToolSpec{Name: "pick_color", Description: "Ask the user to pick a colour in the page",
	InputSchema: json.RawMessage(`{"type":"object"}`)}

func TestL16_ClientToolRoundTripOverTwoRuns(t *testing.T) {
	var ran atomic.Int32
	m := script(
		turn{text: "Let me ask.", calls: []ToolCall{call("c1", "pick_color", `{"options":["red","blue"]}`), call("c2", "search", `{"q":"paint"}`)}},
		turn{text: "You picked blue."},
	)
	a := newAgent(t, Config{Model: m, Tools: tools(t, countingTool(&ran))})
	in := userIn("s1", "choose a colour")
	in.ClientTools = []ToolSpec{pickColor}
	res, evs := runCollect(t, a, in)
	if res.Status != StatusInterrupted || res.Reason != ReasonClientToolCall || res.Err != nil {
		t.Fatalf("run 1: %s/%s err %v", res.Status, res.Reason, res.Err)
	}
	if len(res.PendingCalls) != 1 || res.PendingCalls[0].ID != "c1" || ran.Load() != 1 {
		t.Fatalf("pending %v, search ran %d", res.PendingCalls, ran.Load())
	}
	if names := m.requests()[0].Tools; len(names) != 2 || names[1].Name != "pick_color" {
		t.Fatalf("offered %v", names)
	}
	equal(t, "run 1 events", kinds(evs), []string{
		"run_started", "status:preparing", "status:model_running", "text", "assistant_message", "usage",
		"status:tool_running", "step_start:pick_color", "tool_call:pick_color",
		"step_start:search", "tool_call:search", "tool_result:search", "step_complete:ok",
		"run_finished:interrupted/client_tool_call",
	})
	fin := eventsOf[RunFinishedData](evs)[0]
	if len(fin.PendingCalls) != 1 || fin.PendingCalls[0].ID != "c1" || fin.StopReason != StopToolUse {
		t.Fatalf("run_finished data %+v", fin)
	}

	// Run 2 supplies the result by call id: it resolves the call, the host runs nothing.
	in2 := RunInput{SessionID: "s1", ClientTools: []ToolSpec{pickColor},
		Messages: []Message{{Role: RoleTool, ToolCallID: "c1", Content: []Part{TextPart("blue")}}}}
	res2, evs2 := runCollect(t, a, in2)
	if res2.Status != StatusCompleted || res2.Final.Text() != "You picked blue." || ran.Load() != 1 {
		t.Fatalf("run 2: %s/%s final %v, search ran %d", res2.Status, res2.Reason, res2.Final, ran.Load())
	}
	equal(t, "run 2 events", kinds(evs2), []string{
		"run_started", "status:preparing", "tool_result:pick_color", "step_complete:ok",
		"status:model_running", "assistant_message", "usage", "final", "status:completed", "run_finished:completed/end_turn",
	})
	equal(t, "history", history(t, a, "s1"), []string{
		"user:choose a colour",
		`assistant:Let me ask. pick_color({"options":["red","blue"]}) search({"q":"paint"})`,
		`tool[c2]:found: {"q":"paint"}`,
		"tool[c1]:blue",
		"assistant:You picked blue.",
	})
}

func TestL16_ClientCallStillUnansweredInterruptsAgain(t *testing.T) {
	m := script(turn{calls: []ToolCall{call("c1", "pick_color", `{}`)}})
	a := newAgent(t, Config{Model: m})
	in := userIn("s1", "choose")
	in.ClientTools = []ToolSpec{pickColor}
	runCollect(t, a, in)
	in2 := userIn("s1", "well?")
	in2.ClientTools = []ToolSpec{pickColor}
	res, evs := runCollect(t, a, in2)
	if res.Status != StatusInterrupted || res.Reason != ReasonClientToolCall || len(res.PendingCalls) != 1 {
		t.Fatalf("%s/%s pending %v", res.Status, res.Reason, res.PendingCalls)
	}
	equal(t, "events", kinds(evs), []string{"run_started", "status:preparing", "status:tool_running",
		"step_start:pick_color", "tool_call:pick_color", "run_finished:interrupted/client_tool_call"})
	equal(t, "history", history(t, a, "s1"), []string{"user:choose", "assistant: pick_color({})"})
}

// The bug this fixes: a result the caller supplied for a pending call was stored and the
// host ran the call too, leaving two results for one id.
func TestL16_SuppliedResultResolvesAPendingHostCall(t *testing.T) {
	var ran atomic.Int32
	m := script(turn{calls: []ToolCall{call("c1", "search", `{"q":"x"}`)}}, turn{text: "ok"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, countingTool(&ran)),
		ToolPolicy: ToolPolicy{RequireApproval: []string{"search"}}, Approver: pendingApprover{}})
	res, _ := runCollect(t, a, userIn("s1", "go"))
	if res.Status != StatusInterrupted {
		t.Fatalf("run 1: %s/%s", res.Status, res.Reason)
	}
	in := RunInput{SessionID: "s1", Messages: []Message{{Role: RoleTool, ToolCallID: "c1", Content: []Part{TextPart("from the caller")}}}}
	res, _ = runCollect(t, a, in)
	if res.Status != StatusCompleted || ran.Load() != 0 {
		t.Fatalf("run 2: %s/%s, search ran %d", res.Status, res.Reason, ran.Load())
	}
	equal(t, "history", history(t, a, "s1"), []string{"user:go", `assistant: search({"q":"x"})`,
		"tool[c1]:from the caller", "assistant:ok"})
}

func TestL16_TwoSuppliedResultsForOneCallAreRefused(t *testing.T) {
	m := script(turn{calls: []ToolCall{call("c1", "pick_color", `{}`)}})
	a := newAgent(t, Config{Model: m})
	in := userIn("s1", "choose")
	in.ClientTools = []ToolSpec{pickColor}
	runCollect(t, a, in)
	r := Message{Role: RoleTool, ToolCallID: "c1", Content: []Part{TextPart("blue")}}
	res, _ := runCollect(t, a, RunInput{SessionID: "s1", Messages: []Message{r, r}})
	if res.Status != StatusFailed || res.Err == nil {
		t.Fatalf("%s/%s err %v", res.Status, res.Reason, res.Err)
	}
	equal(t, "history", history(t, a, "s1"), []string{"user:choose", "assistant: pick_color({})"})
}

func TestL16_ClientToolNamedLikeAHostToolIsRefused(t *testing.T) {
	a := newAgent(t, Config{Model: script(), Tools: tools(t, echoTool())})
	in := userIn("s1", "x")
	in.ClientTools = []ToolSpec{{Name: "echo"}}
	if _, err := a.Run(t.Context(), in); err == nil {
		t.Fatal("want an error")
	}
}
