package loop

import (
	"context"
	"testing"
)

// An ask_NAME sub-run's events reach the caller's stream with their agent path, between
// the ask's tool_call and its tool_result; the caller's session does not store them (the
// sub-session does).
func TestNestedRunEventsReachTheCallerWithTheirPath(t *testing.T) {
	as := teamOf(t,
		Config{Name: "lead", Model: script(turn{calls: []ToolCall{call("q1", "ask_expert", `{"question":"6*7?"}`)}}, turn{text: "42 it is."})},
		Config{Name: "expert", AsTool: true, Tools: tools(t, calcTool()),
			Model: script(turn{calls: []ToolCall{call("c1", "calc", `{"expression":"6*7"}`)}}, turn{text: "42"})},
	)
	res, evs := runCollect(t, as[0], userIn("s", "ask"))
	if res.Final.Text() != "42 it is." {
		t.Fatalf("final %v", res.Final)
	}
	var trace []string
	for _, e := range evs {
		switch e.Type {
		case EventRunStarted, EventToolCall, EventToolResult, EventRunFinished:
			trace = append(trace, e.Path+" "+string(e.Type)+" "+e.RunID)
		}
	}
	run := res.RunID
	equal(t, "trace", trace, []string{
		" run_started " + run,
		" tool_call " + run,
		"lead/expert run_started " + run + ":ask:q1",
		"lead/expert tool_call " + run + ":ask:q1",
		"lead/expert tool_result " + run + ":ask:q1",
		"lead/expert run_finished " + run + ":ask:q1",
		" tool_result " + run,
		" run_finished " + run,
	})
	entries, _ := as[0].Store().Load(context.Background(), "s")
	for _, e := range entries {
		if e.Event != nil && e.Event.RunID != run {
			t.Fatalf("the caller's session stored a nested event: %+v", e.Event)
		}
	}
}

// A call inside an ask_NAME sub-run that needs approval interrupts the top-level run
// (approval_required, the request visible in its stream with its path); the run that
// answers it by call id resumes the sub-run, which runs the call and answers, and the
// top-level run completes. The expert is asked its question once.
func TestNestedApprovalInterruptsTheTopLevelRunAndResumes(t *testing.T) {
	expertM := script(turn{calls: []ToolCall{call("c1", "calc", `{"expression":"6*7"}`)}}, turn{text: "42"})
	as := teamOf(t,
		Config{Name: "lead", Model: script(turn{calls: []ToolCall{call("q1", "ask_expert", `{"question":"6*7?"}`)}}, turn{text: "The expert says 42."}),
			Approver: pendingApprover{}},
		Config{Name: "expert", AsTool: true, Tools: tools(t, calcTool()), Model: expertM, Approver: pendingApprover{},
			ToolPolicy: ToolPolicy{RequireApproval: []string{"calc"}}},
	)
	res, evs := runCollect(t, as[0], userIn("s", "ask"))
	if res.Status != StatusInterrupted || res.Reason != ReasonApprovalRequired {
		t.Fatalf("first run %s/%s %v", res.Status, res.Reason, res.Err)
	}
	var asked []string
	for _, e := range evs {
		if e.Type == EventApproval {
			asked = append(asked, e.Path+" "+e.Data.(*ToolCallData).ID)
		}
	}
	equal(t, "approval requests", asked, []string{"lead/expert c1"})
	if rs := eventsOf[ToolResultData](own(evs)); len(rs) != 0 {
		t.Fatalf("the ask got a result while its sub-run waits: %+v", rs)
	}

	res, _ = runCollect(t, as[0], RunInput{SessionID: "s", Approvals: map[string]Approval{"c1": {Approved: true}}})
	if res.Status != StatusCompleted || res.Final.Text() != "The expert says 42." {
		t.Fatalf("resumed run %s/%s %v %v", res.Status, res.Reason, res.Final, res.Err)
	}
	equal(t, "sub-session", history(t, as[1], "s:ask:q1"),
		[]string{"user:6*7?", `assistant: calc({"expression":"6*7"})`, "tool[c1]:42", "assistant:42"})
	if n := len(expertM.requests()); n != 2 {
		t.Fatalf("the expert's model was called %d times, want 2", n)
	}
}

// A plan step done as a sub-run surfaces its events with the path AGENT/step:ID, and a
// call in it that needs approval interrupts the plan; the answering run resumes the
// sub-run and the plan completes.
func TestPlanSubRunSurfacesItsEventsAndItsApproval(t *testing.T) {
	step := `{"id":"1","description":"compute","expected_outcome":"a number"}`
	m := script(
		turn{text: planJSON(step)}, // planner
		turn{calls: []ToolCall{call("c1", "calc", `{"expression":"6*7"}`)}}, // the step's sub-run
		turn{text: "42"},                        // the sub-run, resumed
		turn{text: verdict("done", "ok", "42")}, // evaluator
	)
	a := newAgent(t, Config{Name: "a", Model: m, Tools: tools(t, calcTool()), Mode: ModePlan, Approver: pendingApprover{},
		ToolPolicy: ToolPolicy{RequireApproval: []string{"calc"}}})
	res, evs := runCollect(t, a, userIn("s", "compute"))
	if res.Status != StatusInterrupted || res.Reason != ReasonApprovalRequired {
		t.Fatalf("first run %s/%s %v", res.Status, res.Reason, res.Err)
	}
	var asked []string
	for _, e := range evs {
		if e.Type == EventApproval {
			asked = append(asked, e.Path+" "+e.Data.(*ToolCallData).ID)
		}
	}
	equal(t, "approval requests", asked, []string{"a/step:1 c1"})
	res, _ = runCollect(t, a, RunInput{SessionID: "s", Approvals: map[string]Approval{"c1": {Approved: true}}})
	if res.Status != StatusCompleted || res.Final.Text() != "42" {
		t.Fatalf("resumed run %s/%s %v %v", res.Status, res.Reason, res.Final, res.Err)
	}
}
