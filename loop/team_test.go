package loop

import (
	"context"
	"strings"
	"testing"
)

// teamOf builds agents sharing one store and joins them.
func teamOf(t *testing.T, cfgs ...Config) []*Agent {
	t.Helper()
	st := NewMemoryStore()
	var as []*Agent
	for _, c := range cfgs {
		c.Store = st
		as = append(as, newAgent(t, c))
	}
	if _, err := NewTeam(as...); err != nil {
		t.Fatal(err)
	}
	return as
}

func toolNames(specs []ToolSpec) string {
	var n []string
	for _, s := range specs {
		n = append(n, s.Name)
	}
	return strings.Join(n, ",")
}

// A hand-off continues the run under the target: its system prompt and tools, events
// named after it, a handoff event, and metrics that count it.
func TestHandoffContinuesTheRunUnderTheTarget(t *testing.T) {
	triageM := script(turn{calls: []ToolCall{call("h1", "transfer_to_billing", `{"reason":"a refund"}`)}})
	billingM := script(turn{calls: []ToolCall{call("c1", "calc", `{"expression":"40+2"}`)}}, turn{text: "Refunded 42."})
	as := teamOf(t,
		Config{Name: "triage", SystemPrompt: "You route.", Model: triageM, Handoffs: []string{"billing"}},
		Config{Name: "billing", SystemPrompt: "You do billing.", Model: billingM, Tools: tools(t, calcTool()), Description: "Refunds and invoices."},
	)
	res, evs := runCollect(t, as[0], userIn("s", "refund me"))
	if res.Status != StatusCompleted || res.Final.Text() != "Refunded 42." {
		t.Fatalf("result %s/%s %v", res.Status, res.Reason, res.Final)
	}
	if got := toolNames(triageM.requests()[0].Tools); got != "transfer_to_billing" {
		t.Fatalf("triage was offered %s", got)
	}
	if d := triageM.requests()[0].Tools[0].Description; d != "Hand the conversation over to the agent billing. Refunds and invoices." {
		t.Fatalf("transfer tool description %q", d)
	}
	req := billingM.requests()[0]
	if req.Messages[0].Text() != "You do billing." || toolNames(req.Tools) != "calc" {
		t.Fatalf("billing got system %q tools %s", req.Messages[0].Text(), toolNames(req.Tools))
	}
	hs := eventsOf[HandoffData](evs)
	if len(hs) != 1 || hs[0] != (HandoffData{From: "triage", To: "billing", Depth: 1, Reason: "a refund"}) {
		t.Fatalf("handoff events %+v", hs)
	}
	var agents []string
	for _, e := range evs {
		if e.Type == EventToolCall || e.Type == EventHandoff || e.Type == EventRunFinished {
			agents = append(agents, string(e.Type)+"@"+e.Agent)
		}
	}
	equal(t, "acting agents", agents, []string{"tool_call@triage", "handoff@triage", "tool_call@billing", "run_finished@billing"})
	m := eventsOf[RunFinishedData](evs)[0].Metrics
	if m.Handoffs != 1 || m.ModelCalls != 3 || m.ToolCalls != 2 || m.ToolErrors != 0 || m.Steps != 2 {
		t.Fatalf("metrics %+v", m)
	}
}

// A transfer back to an agent already on the chain is refused (the model sees why)
// unless cycles are allowed.
func TestHandoffCycleIsRefused(t *testing.T) {
	as := teamOf(t,
		Config{Name: "a", Model: script(turn{calls: []ToolCall{call("h1", "transfer_to_b", `{}`)}}), Handoffs: []string{"b"}},
		Config{Name: "b", Model: script(turn{calls: []ToolCall{call("h2", "transfer_to_a", `{}`)}}, turn{text: "staying"}), Handoffs: []string{"a"}},
	)
	res, evs := runCollect(t, as[0], userIn("s", "go"))
	if res.Status != StatusCompleted || res.Final.Text() != "staying" {
		t.Fatalf("result %s/%s", res.Status, res.Reason)
	}
	rs := eventsOf[ToolResultData](evs)
	if len(rs) != 2 || !rs[1].IsError || rs[1].Content != "Error: transfer to a refused: a already acted in this run (a → b), and cycles are not allowed" {
		t.Fatalf("results %+v", rs)
	}
	if n := len(eventsOf[HandoffData](evs)); n != 1 {
		t.Fatalf("%d hand-offs", n)
	}
}

// A transfer past max_handoffs ends the run incomplete/max_handoffs, with a summary.
func TestHandoffPastTheLimitEndsTheRunIncomplete(t *testing.T) {
	as := teamOf(t,
		Config{Name: "a", MaxHandoffs: 1, Model: script(turn{calls: []ToolCall{call("h1", "transfer_to_b", `{}`)}}), Handoffs: []string{"b"}},
		Config{Name: "b", Model: script(turn{calls: []ToolCall{call("h2", "transfer_to_c", `{}`)}}, turn{text: "summary of b"}), Handoffs: []string{"c"}},
		Config{Name: "c", Model: script(turn{text: "never"})},
	)
	res, evs := runCollect(t, as[0], userIn("s", "go"))
	if res.Status != StatusIncomplete || res.Reason != ReasonMaxHandoffs || res.Final.Text() != "summary of b" {
		t.Fatalf("result %s/%s %v", res.Status, res.Reason, res.Final)
	}
	rs := eventsOf[ToolResultData](evs)
	if rs[1].Content != "Error: transfer to c refused: the run reached max_handoffs (1)" {
		t.Fatalf("refusal %q", rs[1].Content)
	}
}

// ask_NAME runs the agent on a session of its own and returns its answer; the sub-run's
// history is stored; asks nest at most max_handoffs deep.
func TestAgentAsToolRunsASubRun(t *testing.T) {
	as := teamOf(t,
		Config{Name: "lead", Model: script(turn{calls: []ToolCall{call("q1", "ask_expert", `{"question":"what is 6*7?"}`)}}, turn{text: "The expert says 42."})},
		Config{Name: "expert", AsTool: true, Model: script(turn{text: "42"})},
	)
	res, evs := runCollect(t, as[0], userIn("s", "ask the expert"))
	if res.Final.Text() != "The expert says 42." {
		t.Fatalf("final %v", res.Final)
	}
	rs := eventsOf[ToolResultData](evs)
	if len(rs) != 1 || rs[0].Content != "42" || rs[0].Name != "ask_expert" {
		t.Fatalf("results %+v", rs)
	}
	equal(t, "sub-session", history(t, as[1], "s:ask:q1"), []string{"user:what is 6*7?", "assistant:42"})

	// Nesting: one ask deep at most.
	deep := teamOf(t,
		Config{Name: "x", MaxHandoffs: 1, AsTool: true, Model: script(turn{calls: []ToolCall{call("q1", "ask_y", `{"question":"?"}`)}}, turn{text: "x done"})},
		Config{Name: "y", MaxHandoffs: 1, AsTool: true, Model: script(turn{calls: []ToolCall{call("q2", "ask_x", `{"question":"?"}`)}}, turn{text: "y done"})},
	)
	_, evs = runCollect(t, deep[0], userIn("d", "go"))
	if rs := eventsOf[ToolResultData](own(evs)); rs[0].Content != "y done" {
		t.Fatalf("outer ask %+v", rs)
	}
	inner := eventsOfSession(t, deep[1], "d:ask:q1")
	if !strings.Contains(inner, "Error: ask_x refused: asks nest 1 deep at most (max_handoffs)") {
		t.Fatalf("inner ask was not refused:\n%s", inner)
	}
}

// RunInput.Agent picks the team agent that starts the run; an unknown one is an error
// before anything is stored.
func TestRunInputAgentPicksTheEntryAgent(t *testing.T) {
	as := teamOf(t, Config{Name: "a", Model: script(turn{text: "from a"})}, Config{Name: "b", Model: script(turn{text: "from b"})})
	in := userIn("s", "hi")
	in.Agent = "b"
	res, evs := runCollect(t, as[0], in)
	if res.Final.Text() != "from b" || evs[0].Agent != "b" {
		t.Fatalf("run by %q: %v", evs[0].Agent, res.Final)
	}
	in = userIn("s2", "hi")
	in.Agent = "nobody"
	if _, err := as[0].Run(context.Background(), in); err == nil || !strings.Contains(err.Error(), `no agent "nobody"`) {
		t.Fatalf("err %v", err)
	}
	if es, _ := as[0].Store().Load(context.Background(), "s2"); len(es) != 0 {
		t.Fatalf("an unknown agent stored %d entries", len(es))
	}
}

func TestNewTeamChecksNamesTargetsAndStore(t *testing.T) {
	m := script()
	for _, tc := range []struct {
		cfgs []Config
		want string
	}{
		{[]Config{{Name: "a", Model: m}, {Name: "a", Model: m}}, `two team agents are named "a"`},
		{[]Config{{Name: "a", Model: m, Handoffs: []string{"zz"}}}, `hands off to "zz", which is not in the team`},
	} {
		var as []*Agent
		st := NewMemoryStore()
		for _, c := range tc.cfgs {
			c.Store = st
			as = append(as, newAgent(t, c))
		}
		if _, err := NewTeam(as...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err %v, want %s", err, tc.want)
		}
	}
	if _, err := NewTeam(newAgent(t, Config{Name: "a", Model: m}), newAgent(t, Config{Name: "b", Model: m})); err == nil || !strings.Contains(err.Error(), "another store") {
		t.Errorf("two stores: %v", err)
	}
}

// eventsOfSession renders a stored session's tool results.
func eventsOfSession(t *testing.T, a *Agent, session string) string {
	t.Helper()
	es, err := a.Store().Load(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range es {
		if e.Event != nil {
			if d, ok := e.Event.Data.(*ToolResultData); ok {
				b.WriteString(d.Content + "\n")
			}
		}
	}
	return b.String()
}

// own is the events of the run itself, without those of nested runs (Event.Path).
func own(evs []Event) []Event {
	var out []Event
	for _, e := range evs {
		if e.Path == "" {
			out = append(out, e)
		}
	}
	return out
}
