package host

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/agenthost/agenthost/insights"
	"github.com/agenthost/agenthost/loop"
)

// mergeTeam is agents a, b, c and j, each answering "Paris" for 40+10 tokens and
// $0.01, and the merge agent m with merge and extra keys.
func mergeTeam(t *testing.T, merge, extra string) *Host {
	t.Helper()
	agents := ""
	for _, a := range []string{"a", "b", "c", "j"} {
		agents += "[agents." + a + "]\nsystem_prompt = \"You are " + a + ".\"\n"
	}
	turn := `{"text": "Paris", "usage": {"prompt_tokens": 40, "completion_tokens": 10, "cost_usd": 0.01}}`
	return openHostWith(t, "", `{"per_session": false, "turns": [`+turn+`,`+turn+`,`+turn+`,`+turn+`]}`,
		agents+"[agents.m]\nmerge = "+merge+"\n"+extra, Options{})
}

// runMerge runs m on question in session s and returns its result and run_finished.
func runMerge(t *testing.T, h *Host) (loop.RunResult, *loop.RunFinishedData) {
	t.Helper()
	var fin *loop.RunFinishedData
	res, err := h.Runner().RunWith(context.Background(), loop.RunInput{SessionID: "s", Agent: "m",
		Messages: []loop.Message{loop.UserMessage("Capital of France?")}}, func(e loop.Event) {
		if d, ok := e.Data.(*loop.RunFinishedData); ok && e.Path == "" {
			fin = d
		}
	})
	if err != nil || fin == nil {
		t.Fatalf("run m: %v %+v", err, res)
	}
	return res, fin
}

// A merge agent's asks draw from its budget: with max_tokens = 100 and three agents of
// 50 tokens each, a and b are asked, c is not started (its session is empty), and the
// run ends as a run its budget stopped (incomplete/budget_exceeded, the loop's fixed
// summary) with the usage of the two asks in its result, run_finished and the stored
// run_finished that insights reads.
func TestAMergeAgentsAsksSpendItsBudgetAndStopWhenItIsSpent(t *testing.T) {
	h := mergeTeam(t, `{ agents = ["a", "b", "c"], by = "vote" }`, "max_tokens = 100\n")
	res, fin := runMerge(t, h)
	if res.Status != loop.StatusIncomplete || res.Reason != loop.ReasonBudgetExceeded ||
		res.Final.Text() != fmt.Sprintf("The run stopped (%s) before it finished, and no summary could be produced.", loop.ReasonBudgetExceeded) {
		t.Fatalf("run %s/%s %v %v", res.Status, res.Reason, res.Final, res.Err)
	}
	for _, u := range []loop.Usage{res.Usage, fin.Usage} {
		if u.PromptTokens != 80 || u.CompletionTokens != 20 || u.TotalTokens != 100 || math.Abs(u.CostUSD-0.02) > 1e-9 {
			t.Fatalf("usage %+v, want the two asks' 100 tokens and $0.02", u)
		}
	}
	if es, err := h.Store.Load(context.Background(), "s:merge.c"); err != nil || len(es) != 0 {
		t.Fatalf("c was asked past the budget: %v, %d entries", err, len(es))
	}
	rep, err := insights.Compute(context.Background(), h.Store, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, o := range rep.Outcomes {
		if o.Status == loop.StatusIncomplete && o.Reason == loop.ReasonBudgetExceeded {
			found = o.Runs == 1 && math.Abs(o.CostUSD-0.02) < 1e-9
		}
	}
	if !found {
		t.Fatalf("insights has not the merge run's cost: %+v", rep.Outcomes)
	}
}

// Within its budget, a merge agent's usage is the sum of every ask's, the judge's
// included: a, b and the judge j at 50 tokens and $0.01 each make 150 tokens and $0.03.
func TestAMergeAgentsUsageIsTheSumOfItsAsksAndItsJudges(t *testing.T) {
	h := mergeTeam(t, `{ agents = ["a", "b"], by = "judge", judge = "j" }`, "max_tokens = 1000\nmax_cost_usd = 1.0\n")
	res, fin := runMerge(t, h)
	if res.Status != loop.StatusCompleted || res.Final.Text() != "Paris" {
		t.Fatalf("run %s/%s %v %v", res.Status, res.Reason, res.Final, res.Err)
	}
	for _, u := range []loop.Usage{res.Usage, fin.Usage} {
		if u.TotalTokens != 150 || math.Abs(u.CostUSD-0.03) > 1e-9 {
			t.Fatalf("usage %+v, want 150 tokens and $0.03", u)
		}
	}
	if es, err := h.Store.Load(context.Background(), "s:merge.judge"); err != nil || len(es) == 0 {
		t.Fatalf("the judge's session: %v, %d entries", err, len(es))
	}
}

// A judge the cost budget cannot pay for is not asked: the merge ends budget_exceeded
// after the two asks ($0.02 of max_cost_usd = 0.02).
func TestAMergeAgentsJudgeIsNotAskedPastTheCostBudget(t *testing.T) {
	h := mergeTeam(t, `{ agents = ["a", "b"], by = "judge", judge = "j" }`, "max_cost_usd = 0.02\n")
	res, fin := runMerge(t, h)
	if res.Status != loop.StatusIncomplete || res.Reason != loop.ReasonBudgetExceeded || fin.Usage.TotalTokens != 100 {
		t.Fatalf("run %s/%s usage %+v", res.Status, res.Reason, fin.Usage)
	}
	if es, err := h.Store.Load(context.Background(), "s:merge.judge"); err != nil || len(es) != 0 {
		t.Fatalf("the judge was asked past the budget: %v, %d entries", err, len(es))
	}
}

// A merge agent asked by another (ask_m) keeps its own budget over its asks: its ledger
// is nested in its caller's, so with max_tokens = 100 it stops before c, and its caller's
// usage includes the asks.
func TestANestedMergeAgentsBudgetBoundsItsAsks(t *testing.T) {
	agents := ""
	for _, a := range []string{"a", "b", "c"} {
		agents += "[agents." + a + "]\nsystem_prompt = \"You are " + a + ".\"\n"
	}
	paris := `{"text": "Paris", "usage": {"prompt_tokens": 40, "completion_tokens": 10}}`
	h := openHostWith(t, "", `{"per_session": false, "turns": [
	  {"tool_calls": [{"id": "q1", "name": "ask_m", "arguments": "{\"question\": \"Capital of France?\"}"}], "usage": {"prompt_tokens": 5, "completion_tokens": 5}},
	  `+paris+`, `+paris+`,
	  {"text": "m ran out of budget", "usage": {"prompt_tokens": 5, "completion_tokens": 5}}]}`,
		agents+"[agents.m]\nas_tool = true\nmax_tokens = 100\nmerge = { agents = [\"a\", \"b\", \"c\"] }\n", Options{})
	var m *loop.RunFinishedData
	res, err := h.Runner().RunWith(context.Background(), loop.RunInput{SessionID: "s", Messages: []loop.Message{loop.UserMessage("ask m")}}, func(e loop.Event) {
		if d, ok := e.Data.(*loop.RunFinishedData); ok && e.Path != "" {
			m = d
		}
	})
	if err != nil || res.Status != loop.StatusCompleted || res.Usage.TotalTokens != 120 {
		t.Fatalf("caller: %v %s/%s usage %+v", err, res.Status, res.Reason, res.Usage)
	}
	if m == nil || m.Status != loop.StatusIncomplete || m.Reason != loop.ReasonBudgetExceeded || m.Usage.TotalTokens != 100 {
		t.Fatalf("m's run: %+v", m)
	}
	if es, err := h.Store.Load(context.Background(), "s:ask:q1:merge.b"); err != nil || len(es) == 0 {
		t.Fatalf("b's session: %v, %d entries", err, len(es))
	}
	if es, err := h.Store.Load(context.Background(), "s:ask:q1:merge.c"); err != nil || len(es) != 0 {
		t.Fatalf("c was asked past m's budget: %v, %d entries", err, len(es))
	}
}

// A merge agent's asks run within its max_run_duration: an ask still running at the
// deadline is stopped, the next is not started, and the run ends incomplete/max_duration
// with the loop's fixed summary (the summary call asks nobody).
func TestAMergeAgentsAsksStopAtItsDeadline(t *testing.T) {
	agents := "[agents.a]\n[agents.b]\n"
	h := openHostWith(t, "", `{"per_session": false, "turns": [{"text": "late", "delay_ms": 120000}, {"text": "never"}]}`,
		agents+"[agents.m]\nmax_run_duration = \"300ms\"\nmerge = { agents = [\"a\", \"b\"] }\n", Options{})
	res, fin := runMerge(t, h)
	if res.Status != loop.StatusIncomplete || res.Reason != loop.ReasonMaxDuration || fin.Reason != loop.ReasonMaxDuration ||
		res.Final.Text() != fmt.Sprintf("The run stopped (%s) before it finished, and no summary could be produced.", loop.ReasonMaxDuration) {
		t.Fatalf("run %s/%s %v %v", res.Status, res.Reason, res.Final, res.Err)
	}
	if es, err := h.Store.Load(context.Background(), "s:merge.a"); err != nil || len(es) == 0 {
		t.Fatalf("a's session: %v, %d entries", err, len(es))
	}
	if es, err := h.Store.Load(context.Background(), "s:merge.b"); err != nil || len(es) != 0 {
		t.Fatalf("b was asked past the deadline: %v, %d entries", err, len(es))
	}
}
