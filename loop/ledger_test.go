package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// An ask_NAME sub-run spends from its caller's budget: its tokens show in the caller's
// usage, and the caller, past its max_tokens because of them, ends budget_exceeded
// instead of making another call.
func TestL18_AskSubRunSpendsFromTheCallersBudget(t *testing.T) {
	big := &Usage{PromptTokens: 900, CompletionTokens: 100}
	leadM := script(turn{calls: []ToolCall{call("a1", "ask_expert", `{"question":"what is it?"}`)}}, turn{text: "never asked"})
	expertM := script(turn{text: "it is 42", usage: big})
	as := teamOf(t,
		Config{Name: "lead", Model: leadM, Limits: Limits{MaxTokens: 500}},
		Config{Name: "expert", Model: expertM, AsTool: true},
	)
	res, _ := runCollect(t, as[0], userIn("s", "ask the expert"))
	if res.Status != StatusIncomplete || res.Reason != ReasonBudgetExceeded {
		t.Fatalf("result %s/%s %v", res.Status, res.Reason, res.Err)
	}
	// After the ask, only the summary call (L9) is made: tools off.
	if reqs := leadM.requests(); len(reqs) != 2 || len(reqs[1].Tools) != 0 {
		t.Fatalf("the lead made %d model calls after its budget was spent by the ask", len(reqs)-1)
	}
	if want := 15 + 1000 + 15; res.Usage.TotalTokens != want {
		t.Fatalf("the lead's usage is %d tokens, want %d (its own two calls and the expert's 1000)", res.Usage.TotalTokens, want)
	}
}

// A nested run is refused a model call the top-level budget cannot pay for (L18), even
// when its own agent has no budget.
func TestL18_NestedRunIsRefusedWhatTheTopLevelBudgetCannotPay(t *testing.T) {
	leadM := script(turn{calls: []ToolCall{call("a1", "ask_expert", `{"question":"what is it?"}`)}, usage: &Usage{PromptTokens: 95, CompletionTokens: 0}},
		turn{text: "summary"})
	expertM := script(turn{text: "it is 42"})
	as := teamOf(t,
		Config{Name: "lead", Model: leadM, Limits: Limits{MaxTokens: 100}},
		Config{Name: "expert", Model: expertM, AsTool: true},
	)
	res, evs := runCollect(t, as[0], userIn("s", "ask the expert"))
	if len(expertM.requests()) != 0 {
		t.Fatalf("the expert made a model call past the lead's budget")
	}
	results := eventsOf[ToolResultData](evs)
	if len(results) != 1 || !strings.Contains(results[0].Content, "(budget_exceeded)") {
		t.Fatalf("the ask's result %+v", results)
	}
	if res.Reason != ReasonBudgetExceeded {
		t.Fatalf("result %s/%s", res.Status, res.Reason)
	}
}

// A plugin's model calls (create_message, served by the host through the run's Ledger)
// are admitted against the run's budget, charged to it and reported in its usage; a
// loop of them is stopped by max_cost_usd.
func TestL18_PluginModelCallsAreChargedAndStoppedByMaxCost(t *testing.T) {
	calls, refused := 0, error(nil)
	sampler := FuncTool{ToolSpec: ToolSpec{Name: "sampler"}, Fn: func(ctx context.Context, c ToolCall) (ToolResult, error) {
		l := LedgerFrom(ctx)
		for range 1000 {
			if err := l.Admit(100); err != nil {
				refused = err
				break
			}
			l.Charge(Usage{PromptTokens: 100, CompletionTokens: 100}) // priced by the run
			calls++
		}
		return TextResult("sampled"), nil
	}}
	m := script(turn{calls: []ToolCall{call("c1", "sampler", `{}`)}, usage: &Usage{PromptTokens: 1}}, turn{text: "unused"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, sampler), Limits: Limits{MaxCostUSD: 0.01},
		Pricing: Pricing{PromptPerMTok: 10, CompletionPerMTok: 40}}) // a call costs 0.005 USD
	res, _ := runCollect(t, a, userIn("s", "sample"))
	if !errors.Is(refused, ErrBudgetExceeded) || calls != 2 {
		t.Fatalf("%d plugin calls made, then %v", calls, refused)
	}
	if res.Reason != ReasonBudgetExceeded || len(m.requests()) != 2 { // the run's call, then the summary (L9)
		t.Fatalf("result %s/%s after %d model calls", res.Status, res.Reason, len(m.requests()))
	}
	if want := 401 + 15; res.Usage.TotalTokens != want || res.Usage.CostUSD < 0.01 {
		t.Fatalf("usage %+v, want %d tokens and the plugin's cost", res.Usage, want)
	}
}

// A nested run's own budget bounds what it nests too (its ledger is nested in its
// caller's): the middle agent of lead → mid → leaf, past its max_tokens because of the
// leaf's spend, ends budget_exceeded, and its usage and the lead's include the leaf's.
func TestL18_ANestedRunsBudgetBoundsWhatItNests(t *testing.T) {
	leadM := script(turn{calls: []ToolCall{call("a1", "ask_mid", `{"question":"q"}`)}}, turn{text: "done"})
	midM := script(turn{calls: []ToolCall{call("b1", "ask_leaf", `{"question":"q"}`)}}, turn{text: "mid summary"})
	leafM := script(turn{text: "leaf answer", usage: &Usage{PromptTokens: 900, CompletionTokens: 100}})
	as := teamOf(t,
		Config{Name: "lead", Model: leadM},
		Config{Name: "mid", Model: midM, AsTool: true, Limits: Limits{MaxTokens: 500}},
		Config{Name: "leaf", Model: leafM, AsTool: true},
	)
	res, evs := runCollect(t, as[0], userIn("s", "ask mid"))
	var mid *RunFinishedData
	for _, e := range evs {
		if d, ok := e.Data.(*RunFinishedData); ok && e.Path == "lead/mid" {
			mid = d
		}
	}
	if mid == nil || mid.Status != StatusIncomplete || mid.Reason != ReasonBudgetExceeded {
		t.Fatalf("mid's run: %+v", mid)
	}
	if reqs := midM.requests(); len(reqs) != 2 || len(reqs[1].Tools) != 0 {
		t.Fatalf("mid made %d calls after the leaf spent its budget, want only the summary", len(reqs)-1)
	}
	if want := 15 + 1000 + 15; mid.Usage.TotalTokens != want { // its two calls and the leaf's
		t.Fatalf("mid's usage %d, want %d", mid.Usage.TotalTokens, want)
	}
	if want := 15 + 15 + 1030; res.Status != StatusCompleted || res.Usage.TotalTokens != want {
		t.Fatalf("lead: %s/%s usage %d, want %d", res.Status, res.Reason, res.Usage.TotalTokens, want)
	}
}

// budgetModel is a model whose work the run's ledger refused (as a merge agent's asks).
type budgetModel struct{ calls int }

func (m *budgetModel) Stream(context.Context, Request) (Stream, error) {
	m.calls++
	return nil, fmt.Errorf("ask x: %w", ErrBudgetExceeded)
}

// A model call that fails with ErrBudgetExceeded ends the run as the budget does
// (incomplete/budget_exceeded, the fixed summary, no summary call), not retried as a
// transport error.
func TestL18_AModelRefusedByTheLedgerEndsTheRunBudgetExceeded(t *testing.T) {
	m := &budgetModel{}
	a := newAgent(t, Config{Model: m})
	res, _ := runCollect(t, a, userIn("s", "q"))
	if res.Status != StatusIncomplete || res.Reason != ReasonBudgetExceeded || m.calls != 1 ||
		res.Final.Text() != fmt.Sprintf(fallbackSummary, ReasonBudgetExceeded) {
		t.Fatalf("%s/%s %v, %d calls", res.Status, res.Reason, res.Final, m.calls)
	}
}

// A nested run names its parent in its run_started (the run whose usage includes its
// own), in its own session as in its caller's stream; a top-level run names none, and
// its run_started encodes no parent at all.
func TestL18_ANestedRunsRunStartedNamesTheRunItIsNestedIn(t *testing.T) {
	leadM := script(turn{calls: []ToolCall{call("a1", "ask_expert", `{"question":"what is it?"}`)}}, turn{text: "done"})
	as := teamOf(t, Config{Name: "lead", Model: leadM}, Config{Name: "expert", Model: script(turn{text: "42"}), AsTool: true})
	in := userIn("s", "ask the expert")
	in.RunID = "r1"
	_, evs := runCollect(t, as[0], in)
	var started []string
	for _, e := range evs {
		if d, ok := e.Data.(*RunStartedData); ok {
			started = append(started, fmt.Sprintf("%s %s/%s %+v", e.Path, e.SessionID, e.RunID, d.Parent))
		}
	}
	if want := []string{" s/r1 {Session: Run:}", "lead/expert s:ask:a1/r1:ask:a1 {Session:s Run:r1}"}; fmt.Sprint(started) != fmt.Sprint(want) {
		t.Fatalf("run_started %q, want %q", started, want)
	}
	stored, err := as[0].cfg.Store.Load(context.Background(), "s:ask:a1")
	if err != nil || len(stored) == 0 || stored[0].Event == nil {
		t.Fatalf("the expert's session: %v %d", err, len(stored))
	}
	if d, ok := stored[0].Event.Data.(*RunStartedData); !ok || d.Parent != (RunRef{Session: "s", Run: "r1"}) {
		t.Fatalf("stored run_started %+v", stored[0].Event.Data)
	}
	top, err := as[0].cfg.Store.Load(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(top[0].Event.Data); string(b) != `{"model":""}` {
		t.Fatalf("a top-level run_started encodes %s", b)
	}
}
