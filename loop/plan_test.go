package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
)

func planJSON(steps ...string) string {
	return `{"goal":"compute","steps":[` + strings.Join(steps, ",") + `]}`
}

func toolStep(id, expr string) string {
	return fmt.Sprintf(`{"id":%q,"description":"compute %s","tool":"calc","arguments":{"expression":%q},"expected_outcome":"a number"}`, id, expr, expr)
}

func verdict(v, reason, answer string) string {
	b, _ := json.Marshal(Evaluation{Verdict: v, Reason: reason, Answer: answer})
	return string(b)
}

// planTrace renders the plan-mode events.
func planTrace(evs []Event) []string {
	var out []string
	for _, e := range evs {
		switch d := e.Data.(type) {
		case *PlanData:
			out = append(out, fmt.Sprintf("plan %d: %d steps", d.Revision, len(d.Plan.Steps)))
		case *PlanStepData:
			out = append(out, fmt.Sprintf("step %s %s %s", d.ID, d.Status, d.Outcome))
		case *EvaluationData:
			out = append(out, "evaluation "+d.Verdict+": "+d.Reason)
		case *RunFinishedData:
			out = append(out, fmt.Sprintf("finished %s/%s", d.Status, d.Reason))
		}
	}
	return out
}

// Seed 004: the model plans three steps; the second fails, the evaluator asks for a
// replan (the third is skipped), and the second revision completes. The planner and
// evaluator calls send their schema and stream nothing to clients.
func TestPlanStepFailsReplanCompletes(t *testing.T) {
	m := script(
		turn{text: planJSON(toolStep("1", "2+2"), toolStep("2", "2/"), toolStep("3", "1+1"))},
		turn{text: verdict("replan", "step 2 failed", "")},
		turn{text: planJSON(toolStep("a", "3*3"))},
		turn{text: verdict("done", "all good", "4 and 9")},
	)
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool()), Mode: ModePlan})
	res, evs := runCollect(t, a, userIn("s", "compute things"))
	if res.Status != StatusCompleted || res.Final.Text() != "4 and 9" {
		t.Fatalf("result %s/%s %v", res.Status, res.Reason, res.Final)
	}
	equal(t, "plan trace", planTrace(evs), []string{
		"plan 1: 3 steps",
		"step 1 running ", "step 1 ok 4",
		"step 2 running ", "step 2 error calc: 1:3: expected operand, found 'EOF'",
		"evaluation replan: step 2 failed",
		"step 3 skipped ",
		"plan 2: 1 steps",
		"step a running ", "step a ok 9",
		"evaluation done: all good",
		"finished completed/end_turn",
	})
	if n := len(eventsOf[ModelDeltaData](evs)); n != 0 {
		t.Fatalf("planner/evaluator calls streamed %d deltas", n)
	}
	reqs := m.requests()
	if string(reqs[0].ResponseFormat) != string(planSchema) || string(reqs[1].ResponseFormat) != string(evalSchema) {
		t.Fatalf("response formats %s / %s", reqs[0].ResponseFormat, reqs[1].ResponseFormat)
	}
	if !strings.Contains(reqs[2].Messages[1].Text(), `"feedback": "step 2 failed"`) {
		t.Fatalf("the replan did not get the feedback:\n%s", reqs[2].Messages[1].Text())
	}
	fin := eventsOf[RunFinishedData](evs)[0].Metrics
	if fin != (RunMetrics{ModelCalls: 4, ToolCalls: 3, ToolErrors: 1, Steps: 3, Replans: 1, DurationMS: fin.DurationMS}) {
		t.Fatalf("metrics %+v", fin)
	}
	equal(t, "history", history(t, a, "s"), []string{"user:compute things", "assistant:4 and 9"})
}

// Past max_replans the run ends incomplete/max_replans, its final a report of the steps.
func TestPlanExhaustsMaxReplans(t *testing.T) {
	m := script(
		turn{text: planJSON(toolStep("1", "2/"))},
		turn{text: verdict("replan", "try again", "")},
		turn{text: planJSON(toolStep("1", "3/"))},
		turn{text: verdict("replan", "still broken", "")},
	)
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool()), Mode: ModePlan, Plan: PlanConfig{MaxReplans: 1}})
	res, _ := runCollect(t, a, userIn("s", "compute"))
	if res.Status != StatusIncomplete || res.Reason != ReasonMaxReplans {
		t.Fatalf("result %s/%s", res.Status, res.Reason)
	}
	want := `The plan for "compute" did not finish: the evaluator asked for a replan after 1 (max_replans): still broken.` +
		"\n- step 1: error (calc: 1:3: expected operand, found 'EOF')"
	if res.Final.Text() != want {
		t.Fatalf("final:\n%s\nwant:\n%s", res.Final.Text(), want)
	}
}

// A step without a tool is a ReAct sub-run on a session of its own; a custom evaluator
// (the Evaluator interface, as a Wasm evaluator plugs in) decides.
func TestPlanStepWithoutToolIsASubRun(t *testing.T) {
	m := script(
		turn{text: planJSON(`{"id":"1","description":"add 2 and 2","expected_outcome":"4"}`)},
		turn{calls: []ToolCall{call("c1", "calc", `{"expression":"2+2"}`)}},
		turn{text: "it is 4"},
	)
	var seen EvalInput
	ev := evalFunc(func(in EvalInput) Evaluation { seen = in; return Evaluation{Verdict: "done", Reason: "fine"} })
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool()), Mode: ModePlan, Plan: PlanConfig{Evaluator: ev}})
	res, _ := runCollect(t, a, userIn("s", "what is 2+2?"))
	if res.Final.Text() != "it is 4" || len(seen.Outcomes) != 1 || seen.Outcomes[0].Outcome != "it is 4" {
		t.Fatalf("final %v, evaluator saw %+v", res.Final, seen)
	}
	sub := history(t, a, "s:plan:1:1")
	if len(sub) != 4 || !strings.HasPrefix(sub[0], "user:Goal: what is 2+2?\nYour step: add 2 and 2") || sub[3] != "assistant:it is 4" {
		t.Fatalf("sub-run history %q", sub)
	}
}

type evalFunc func(EvalInput) Evaluation

func (f evalFunc) Evaluate(_ context.Context, in EvalInput) (Evaluation, error) { return f(in), nil }

// A run cut short mid-plan is resumed by the next run on the session without input:
// the plan is not made again and finished steps are not executed again.
func TestPlanResumesWithoutRerunningFinishedSteps(t *testing.T) {
	var calls atomic.Int32
	block := make(chan struct{})
	started := make(chan struct{}, 1)
	counter := FuncTool{ToolSpec: ToolSpec{Name: "count", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(ctx context.Context, c ToolCall) (ToolResult, error) {
			n := calls.Add(1)
			if strings.Contains(c.Arguments, "slow") {
				started <- struct{}{}
				select {
				case <-block:
				case <-ctx.Done():
					return ToolResult{}, ctx.Err()
				}
			}
			return TextResult(fmt.Sprint(n)), nil
		}}
	step := func(id, arg string) string {
		return fmt.Sprintf(`{"id":%q,"description":"count","tool":"count","arguments":{"x":%q},"expected_outcome":"n"}`, id, arg)
	}
	m := script(
		turn{text: planJSON(step("1", "fast"), step("2", "slow"))},
		turn{text: verdict("done", "ok", "")},
	)
	a := newAgent(t, Config{Model: m, Tools: tools(t, counter), Mode: ModePlan})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	res, _ := a.RunWith(ctx, userIn("s", "count twice"), nil)
	if res.Status != StatusAborted {
		t.Fatalf("first run %s/%s", res.Status, res.Reason)
	}
	close(block)
	res, evs := runCollect(t, a, RunInput{SessionID: "s"})
	if res.Status != StatusCompleted {
		t.Fatalf("resumed run %s/%s %v", res.Status, res.Reason, res.Err)
	}
	equal(t, "resumed trace", planTrace(evs), []string{"step 2 running ", "step 2 ok 3", "evaluation done: ok", "finished completed/end_turn"})
	if calls.Load() != 3 || len(m.requests()) != 2 {
		t.Fatalf("tool ran %d times (want 3: step 1 once, step 2 twice), model called %d times", calls.Load(), len(m.requests()))
	}
}
