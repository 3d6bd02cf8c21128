package loop

import (
	"context"
	"strings"
	"testing"
)

// storedCallTool answers whether the session already holds its call's tool_call event
// when it runs: the proof that a call is stored before it runs (L21), from inside.
func storedCallTool(store SessionStore) Tool {
	return FuncTool{ToolSpec: ToolSpec{Name: "probe"}, Fn: func(ctx context.Context, c ToolCall) (ToolResult, error) {
		info, _ := CallInfoFrom(ctx)
		entries, err := store.Load(context.Background(), info.SessionID)
		if err != nil {
			return ToolResult{}, err
		}
		for _, e := range entries {
			if e.Event != nil && e.Event.Type == EventToolCall && e.Event.Data.(*ToolCallData).ID == info.CallID {
				return TextResult("stored before: the secret"), nil
			}
		}
		return TextResult("NOT stored before: the secret"), nil
	}}
}

// A plan step's tool call takes the whole pipeline: its tool_call is stored before the
// tool runs, and its result passes the tool_result guardrail (a redaction guardrail
// cannot be bypassed by putting the agent in plan mode).
func TestL22_PlanStepIsStoredBeforeItRunsAndItsResultIsGuarded(t *testing.T) {
	store := NewMemoryStore()
	m := script(
		turn{text: planJSON(`{"id":"1","description":"probe","tool":"probe","arguments":{},"expected_outcome":"x"}`)},
		turn{text: verdict("done", "ok", "")},
	)
	g := &redactor{}
	a := newAgent(t, Config{Model: m, Store: store, Tools: tools(t, storedCallTool(store)), Mode: ModePlan, Guardrails: []Guardrail{g}})
	res, evs := runCollect(t, a, userIn("s", "probe it"))
	if res.Status != StatusCompleted {
		t.Fatalf("result %s/%s %v", res.Status, res.Reason, res.Err)
	}
	results := eventsOf[ToolResultData](evs)
	if len(results) != 1 || results[0].Content != "stored before: the [REDACTED]" {
		t.Fatalf("tool results %+v", results)
	}
	steps := eventsOf[PlanStepData](evs)
	if last := steps[len(steps)-1]; last.Outcome != "stored before: the [REDACTED]" {
		t.Fatalf("the step's outcome is %q", last.Outcome)
	}
	if res.Final.Text() != "stored before: the [REDACTED]" {
		t.Fatalf("final %q", res.Final.Text())
	}
}

// A plan step that needs approval asks the Approver, like any call.
func TestL22_PlanStepNeedsApprovalLikeAnyCall(t *testing.T) {
	m := script(
		turn{text: planJSON(toolStep("1", "6*7"))},
		turn{text: verdict("done", "ok", "")},
	)
	ap := &answerApprover{ok: false, why: "not now"}
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool()), Mode: ModePlan, Approver: ap,
		ToolPolicy: ToolPolicy{RequireApproval: []string{"calc"}}})
	_, evs := runCollect(t, a, userIn("s", "compute"))
	if len(ap.calls) != 1 || ap.calls[0].Name != "calc" {
		t.Fatalf("approver asked %+v", ap.calls)
	}
	results := eventsOf[ToolResultData](evs)
	if len(results) != 1 || results[0].Content != "Error: tool call rejected: not now" {
		t.Fatalf("tool results %+v", results)
	}
}

// DirectCall, the direct call of `mcp serve` and `plugins call`, is refused by the approval
// policy, the permission hook and guardrails exactly as a model's call would be.
func TestL22_DirectCallTakesThePolicyOfAModelsCall(t *testing.T) {
	deny := func(context.Context, ToolCall) PermissionDecision {
		return PermissionDecision{Verdict: PermitDeny, Reason: "plugin says no"}
	}
	cases := []struct {
		name string
		cfg  Config
		in   CallInput
		want string
	}{
		{"require_approval without an approver", Config{ToolPolicy: ToolPolicy{RequireApproval: []string{"calc"}}},
			CallInput{}, "Error: tool call rejected: approval required and no approver is configured"},
		{"require_approval answered no", Config{ToolPolicy: ToolPolicy{RequireApproval: []string{"*"}}},
			CallInput{Approver: &answerApprover{why: "the user said no"}}, "Error: tool call rejected: the user said no"},
		{"require_approval answered yes", Config{ToolPolicy: ToolPolicy{RequireApproval: []string{"calc"}}},
			CallInput{Approver: &answerApprover{ok: true}}, "42"},
		{"approval_default deny", Config{ToolPolicy: ToolPolicy{ApprovalDefault: PermitDeny}},
			CallInput{}, "Error: permission denied for tool 'calc': approval_default is deny"},
		{"permission plugin denies", Config{Permission: deny},
			CallInput{}, "Error: permission denied for tool 'calc': plugin says no"},
		{"argument schema", Config{}, CallInput{Call: call("", "calc", `{"expression":7}`)},
			"Error: invalid arguments for tool 'calc': /expression: got number, want string"},
		{"unknown tool", Config{}, CallInput{Call: call("", "nope", `{}`)}, "Error: Unknown tool 'nope'"},
		{"tool_args guardrail", Config{Guardrails: []Guardrail{&redactor{}}},
			CallInput{Call: call("", "calc", `{"expression":"forbidden"}`)},
			`Error: blocked by guardrail "redact" at tool_args: forbidden word`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Model, cfg.Tools = script(), tools(t, calcTool())
			a := newAgent(t, cfg)
			in := tc.in
			if in.Call.Name == "" {
				in.Call = call("", "calc", `{"expression":"6*7"}`)
			}
			in.SessionID = "mcp-1"
			res, run := a.DirectCall(context.Background(), in, nil)
			if run.Status != StatusCompleted || run.Reason != ReasonDirectCall {
				t.Fatalf("run %s/%s %v", run.Status, run.Reason, run.Err)
			}
			if res.Text() != tc.want || res.IsError != strings.HasPrefix(tc.want, "Error") {
				t.Fatalf("result %q (error %v), want %q", res.Text(), res.IsError, tc.want)
			}
		})
	}
}

// A direct call is stored before it runs and its result after, as events only (no
// message: a session of direct calls has no conversation), and its result passes the
// tool_result guardrail.
func TestL22_DirectCallIsStoredAndGuarded(t *testing.T) {
	store := NewMemoryStore()
	a := newAgent(t, Config{Model: script(), Store: store, Tools: tools(t, storedCallTool(store)), Guardrails: []Guardrail{&redactor{}}})
	var evs []Event
	res, run := a.DirectCall(context.Background(), CallInput{SessionID: "mcp-2", Call: call("c9", "probe", "")},
		func(e Event) { evs = append(evs, e) })
	if res.Text() != "stored before: the [REDACTED]" || run.Status != StatusCompleted {
		t.Fatalf("result %q, run %s/%s", res.Text(), run.Status, run.Reason)
	}
	equal(t, "events", kinds(evs), []string{"run_started", "status:preparing", "status:tool_running", "step_start:probe",
		"tool_call:probe", "guardrail", "tool_result:probe", "step_complete:ok", "status:completed", "run_finished:completed/direct_call"})
	entries, err := store.Load(context.Background(), "mcp-2")
	if err != nil {
		t.Fatal(err)
	}
	var stored []string
	for _, e := range entries {
		if e.Kind != EntryEvent {
			t.Fatalf("a direct call stored a %s entry", e.Kind)
		}
		stored = append(stored, string(e.Event.Type))
	}
	equal(t, "stored", stored, []string{"run_started", "status", "status", "step_start", "tool_call",
		"guardrail", "tool_result", "step_complete", "status", "run_finished"})
	// A second call continues the session's numbering and is refused once the caps say so.
	a2 := newAgent(t, Config{Model: script(), Store: store, Tools: tools(t, storedCallTool(store)),
		ToolPolicy: ToolPolicy{MaxCallsPerRun: -1}})
	if res, _ := a2.DirectCall(context.Background(), CallInput{SessionID: "mcp-2", Call: call("c10", "probe", "")}, nil); res.IsError {
		t.Fatalf("second call %q", res.Text())
	}
}

// A plan step whose call waits for approval interrupts the run (approval_required), and
// the answer given by call id resumes the plan at that step.
func TestL22_PlanStepAwaitingApprovalInterruptsAndResumes(t *testing.T) {
	m := script(
		turn{text: planJSON(toolStep("1", "6*7"))},
		turn{text: verdict("done", "ok", "")},
	)
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool()), Mode: ModePlan, Approver: pendingApprover{},
		ToolPolicy: ToolPolicy{RequireApproval: []string{"calc"}}})
	res, evs := runCollect(t, a, userIn("s", "compute"))
	if res.Status != StatusInterrupted || res.Reason != ReasonApprovalRequired {
		t.Fatalf("first run %s/%s %v", res.Status, res.Reason, res.Err)
	}
	if asks := eventsOf[ToolCallData](evs); len(asks) != 2 || asks[1].ID != "plan1_1" { // tool_call, approval_required
		t.Fatalf("approval events %+v", asks)
	}
	res, _ = runCollect(t, a, RunInput{SessionID: "s", Approvals: map[string]Approval{"plan1_1": {Approved: true}}})
	if res.Status != StatusCompleted || res.Final.Text() != "42" {
		t.Fatalf("resumed run %s/%s %v %v", res.Status, res.Reason, res.Final, res.Err)
	}
}
