package loop

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

// rendezvousTool returns once n of its calls are in flight together, or fails after a
// bound: a plan whose steps ran one after the other cannot pass it.
func rendezvousTool(n int) Tool {
	var mu sync.Mutex
	count, all := 0, make(chan struct{})
	return FuncTool{
		ToolSpec: ToolSpec{Name: "meet", InputSchema: json.RawMessage(`{"type":"object","properties":{"v":{"type":"string"}}}`)},
		Fn: func(ctx context.Context, c ToolCall) (ToolResult, error) {
			mu.Lock()
			if count++; count == n {
				close(all)
			}
			mu.Unlock()
			select {
			case <-all:
			case <-time.After(20 * time.Second): // a hang guard: the test fails, not hangs
				return ErrorResult("the other steps never started: not run together"), nil
			case <-ctx.Done():
				return ToolResult{}, ctx.Err()
			}
			var a struct{ V string }
			_ = json.Unmarshal([]byte(c.Arguments), &a)
			return TextResult(a.V), nil
		},
	}
}

// A plan with dependencies: the two independent tool steps run together, the step that
// uses their outcomes (and a plan parameter) waits for both and gets their values.
func TestPlanDAG_IndependentStepsRunTogetherAndDependentsGetTheirOutcomes(t *testing.T) {
	plan := `{"goal":"g","parameters":{"k":10},"steps":[
	 {"id":"a","description":"a","tool":"meet","arguments":{"v":"3"},"expected_outcome":"3"},
	 {"id":"b","description":"b","tool":"meet","arguments":{"v":"4"},"expected_outcome":"4"},
	 {"id":"c","description":"sum","tool":"calc","arguments":{"expression":"${steps.a.outcome} * ${steps.b.outcome} + ${params.k}"},"expected_outcome":"22","depends_on":["a"]}]}`
	m := script(turn{text: plan}, turn{text: verdict("done", "ok", "")})
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool(), rendezvousTool(2)), Mode: ModePlan})
	res, evs := runCollect(t, a, userIn("s", "go"))
	if res.Status != StatusCompleted || res.Final.Text() != "22" {
		t.Fatalf("result %s/%s %v\n%v", res.Status, res.Reason, res.Final, planTrace(evs))
	}
	equal(t, "plan trace", planTrace(evs), []string{
		"plan 1: 3 steps",
		"step a running ", "step b running ", "step a ok 3", "step b ok 4",
		"step c running ", "step c ok 22",
		"evaluation done: ok",
		"finished completed/end_turn",
	})
	var call ToolCallData
	for _, e := range eventsOf[ToolCallData](evs) {
		if e.Name == "calc" {
			call = e
		}
	}
	if args, _ := json.Marshal(call.Arguments); !strings.Contains(string(args), `3 * 4 + 10`) {
		t.Fatalf("step c was called with %s", args)
	}
}

// A step whose dependency failed is skipped; independent steps go on.
func TestPlanDAG_AFailedDependencySkipsItsDependentsOnly(t *testing.T) {
	plan := planJSON(toolStep("x", "2/"),
		`{"id":"y","description":"after x","tool":"calc","arguments":{"expression":"1"},"expected_outcome":"1","depends_on":["x"]}`,
		`{"id":"z","description":"apart","tool":"calc","arguments":{"expression":"5"},"expected_outcome":"5","depends_on":[]}`,
		`{"id":"w","description":"after y","tool":"calc","arguments":{"expression":"${steps.y.outcome}"},"expected_outcome":"1"}`)
	m := script(turn{text: plan}, turn{text: verdict("continue", "go on", "")}, turn{text: verdict("done", "enough", "")})
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool()), Mode: ModePlan, Plan: PlanConfig{MaxParallel: 1}})
	res, evs := runCollect(t, a, userIn("s", "go"))
	if res.Status != StatusCompleted {
		t.Fatalf("result %s/%s", res.Status, res.Reason)
	}
	equal(t, "plan trace", planTrace(evs), []string{
		"plan 1: 4 steps",
		"step x running ", "step x error calc: 1:3: expected operand, found 'EOF'",
		"evaluation continue: go on", // a failed step is judged at once
		"step z running ", "step z ok 5",
		"step y skipped a step it depends on did not end ok",
		"step w skipped a step it depends on did not end ok",
		"evaluation done: enough",
		"finished completed/end_turn",
	})
}

func TestPlanDAG_RefusesCyclesAndUnknownReferences(t *testing.T) {
	step := func(id, args string, deps ...string) PlanStep {
		return PlanStep{ID: id, Description: id, Tool: "calc", Arguments: json.RawMessage(args), DependsOn: deps}
	}
	for _, c := range []struct {
		plan Plan
		want string
	}{
		{Plan{Steps: []PlanStep{step("a", `{}`, "b"), step("b", `{}`, "a")}}, "cycle: a → b → a"},
		{Plan{Steps: []PlanStep{step("a", `{"x":"${steps.b.outcome}"}`), step("b", `{}`, "a")}}, "cycle"},
		{Plan{Steps: []PlanStep{step("a", `{}`, "ghost")}}, `depends on an unknown step "ghost"`},
		{Plan{Steps: []PlanStep{step("a", `{"x":"${steps.ghost.outcome}"}`)}}, `refers to an unknown step "ghost"`},
		{Plan{Steps: []PlanStep{step("a", `{"x":"${params.n}"}`)}}, `refers to an unknown parameter "n"`},
	} {
		if err := checkPlan(c.plan); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("checkPlan(%+v) = %v, want %q", c.plan, err, c.want)
		}
	}
}

// Of two tool steps run together, the one whose call waits for a human interrupts the
// run once the one admitted before it ended (later ones wait, as in an answer's batch);
// that one's outcome is stored, so the resume with the answer runs only the waiting
// step, and then what depends on both (which asks in turn).
func TestPlanDAG_AWaitingApprovalInAParallelWaveResumesOnlyThatStep(t *testing.T) {
	plan := `{"goal":"g","steps":[
	 {"id":"b","description":"b","tool":"meet","arguments":{"v":"7"},"expected_outcome":"7","depends_on":[]},
	 {"id":"a","description":"a","tool":"calc","arguments":{"expression":"6*7"},"expected_outcome":"42","depends_on":[]},
	 {"id":"c","description":"c","tool":"calc","arguments":{"expression":"${steps.a.outcome} + ${steps.b.outcome}"},"expected_outcome":"49"}]}`
	m := script(turn{text: plan}, turn{text: verdict("done", "ok", "")})
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool(), rendezvousTool(1)), Mode: ModePlan, Approver: pendingApprover{},
		ToolPolicy: ToolPolicy{RequireApproval: []string{"calc"}}})
	res, evs := runCollect(t, a, userIn("s", "go"))
	if res.Status != StatusInterrupted || res.Reason != ReasonApprovalRequired {
		t.Fatalf("first run %s/%s %v\n%v", res.Status, res.Reason, res.Err, planTrace(evs))
	}
	equal(t, "first run", planTrace(evs), []string{"plan 1: 3 steps", "step b running ", "step a running ", "step b ok 7",
		"finished interrupted/approval_required"})
	// An answer for step c, which no one was asked about yet, approves nothing (an
	// approval is bound to a request): c asks when it comes, and its own answer runs it.
	res, evs = runCollect(t, a, RunInput{SessionID: "s", Approvals: map[string]Approval{"plan1_a": {Approved: true}, "plan1_c": {Approved: true}}})
	if res.Status != StatusInterrupted || res.Reason != ReasonApprovalRequired {
		t.Fatalf("resumed run %s/%s %v\n%v", res.Status, res.Reason, res.Err, planTrace(evs))
	}
	evs2 := evs
	res, evs = runCollect(t, a, RunInput{SessionID: "s", Approvals: map[string]Approval{"plan1_c": {Approved: true}}})
	evs = append(evs2, evs...)
	if res.Status != StatusCompleted || res.Final.Text() != "49" {
		t.Fatalf("resumed run %s/%s %v %v\n%v", res.Status, res.Reason, res.Final, res.Err, planTrace(evs))
	}
	for _, e := range eventsOf[ToolCallData](evs) {
		if e.Name == "meet" {
			t.Fatalf("the resume ran step b again: %+v", e)
		}
	}
}
