package insights

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// A nested run's usage counts once, in its parent's run: a run whose run_started names
// a parent, and a run stored before run_started did whose session is named as a
// sub-session (PARENT:ask:CALL, PARENT:merge.AGENT, PARENT:plan:REV:STEP) of a stored
// session, count in Nested under their agent, not in the runs, outcomes, cost, tokens
// or failures; their tool calls and plans still count. A session merely named like a
// sub-session, with no such parent stored, holds top-level runs.
func TestANestedRunsUsageCountsOnceInItsParentsAndPerAgentInNested(t *testing.T) {
	st := loop.NewMemoryStore()
	ctx := context.Background()
	at := time.Now().Add(-time.Minute)
	usage := func(tokens int, cost float64) loop.Usage {
		return loop.Usage{PromptTokens: tokens, CompletionTokens: tokens / 10, CostUSD: cost}
	}
	run := func(session, id, agent string, parent loop.RunRef, u loop.Usage, status loop.Status, extra ...loop.Entry) {
		es := []loop.Entry{ev(1, at, id, "", loop.RunStartedData{Parent: parent}, loop.EventRunStarted)}
		es = append(es, extra...)
		es = append(es, ev(int64(len(es)+1), at, id, "", loop.RunFinishedData{Status: status, Reason: loop.ReasonEndTurn, Usage: u}, loop.EventRunFinished))
		for _, e := range es {
			e.Event.Agent = agent
		}
		if err := st.Append(ctx, session, es...); err != nil {
			t.Fatal(err)
		}
	}
	top := loop.RunRef{Session: "s", Run: "r1"}
	// The parent: its usage is its own 100 tokens and $0.10 plus every nested run's.
	run("s", "r1", "m", loop.RunRef{}, usage(100+200+300+400, 0.10+0.02+0.03+0.04), loop.StatusCompleted)
	run("s:merge.a", "ra", "a", top, usage(200, 0.02), loop.StatusCompleted,
		ev(2, at, "ra", "", loop.ToolResultData{Name: "calc", DurationMS: 4}, loop.EventToolResult))
	run("s:merge.b", "rb", "b", loop.RunRef{}, usage(300, 0.03), loop.StatusFailed, // stored before the marker
		ev(2, at, "rb", "", loop.PlanData{Revision: 1}, loop.EventPlan))
	run("s:ask:q1:merge.b", "rq", "b", loop.RunRef{}, usage(400, 0.04), loop.StatusCompleted) // its parent: s:ask:q1, below
	run("s:ask:q1", "rx", "x", loop.RunRef{}, loop.Usage{}, loop.StatusCompleted)
	run("mine:ask:nobody", "ro", "m", loop.RunRef{}, usage(10, 0.5), loop.StatusCompleted) // no session "mine"
	r, err := Compute(ctx, st, at.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if r.Runs != 2 || fmt.Sprintf("%+v", r.Outcomes) != "[{Status:completed Reason:end_turn Runs:2 CostUSD:0.69}]" ||
		len(r.Failures) != 0 || fmt.Sprint(r.Cost) != "map[completed:0.69]" {
		t.Fatalf("runs %d outcomes %+v failures %+v cost %v", r.Runs, r.Outcomes, r.Failures, r.Cost)
	}
	if r.Tokens != (Tokens{Prompt: 1010, Completion: 101}) {
		t.Fatalf("tokens %+v, want the two top-level runs' only", r.Tokens)
	}
	want := "[{Agent:a Runs:1 CostUSD:0.02 Tokens:{Prompt:200 Completion:20 CachedPrompt:0 CacheWrite:0}} " +
		"{Agent:b Runs:2 CostUSD:0.07 Tokens:{Prompt:700 Completion:70 CachedPrompt:0 CacheWrite:0}} " +
		"{Agent:x Runs:1 CostUSD:0 Tokens:{Prompt:0 Completion:0 CachedPrompt:0 CacheWrite:0}}]"
	if got := fmt.Sprintf("%+v", r.Nested); got != want {
		t.Fatalf("nested %s\nwant   %s", got, want)
	}
	if len(r.Tools) != 1 || r.Tools[0].Name != "calc" || r.Tools[0].Calls != 1 {
		t.Fatalf("tools %+v", r.Tools)
	}
	if len(r.Plans) != 1 || r.Plans[0].Agent != "b" || r.Plans[0].Runs != 1 {
		t.Fatalf("plans %+v", r.Plans)
	}
}

// subSession finds a parent at any of its marks, however many the id has, and only a
// stored one.
func TestSubSessionNeedsAStoredParentBeforeAMark(t *testing.T) {
	known := map[string]bool{"s": true, "s:ask:q1": true, "p:x": true}
	for id, want := range map[string]bool{
		"s:merge.a": true, "s:ask:q1": true, "s:plan:2:s1": true, "s:ask:q1:merge.judge": true, "p:x:ask:1": true,
		"p:ask:1": false, "s": false, "s:merge": false, "x:merge.s": false, ":ask:": false, "s:asks:1": false, "\xff:ask:": false,
	} {
		if got := subSession(id, known); got != want {
			t.Errorf("subSession(%q) = %v, want %v", id, got, want)
		}
	}
}
