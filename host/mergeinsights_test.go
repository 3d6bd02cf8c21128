package host

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agenthost/agenthost/insights"
	"github.com/agenthost/agenthost/loop"
)

// insights counts a merge agent's asks, and an ask_NAME's run, once: in the spend of the
// top-level run they are nested in. The main agent asks m (ask_m), which merges a and b,
// then m is run on its own and merges them again: two runs, the first 10+100+10 tokens
// and $0.022, the second 100 tokens and $0.02; m, a and b are reported per agent as
// nested runs, with their share.
func TestInsightsCountsAMergeAgentsAndAnAsksNestedRunsOnce(t *testing.T) {
	paris := `{"text": "Paris", "usage": {"prompt_tokens": 40, "completion_tokens": 10, "cost_usd": 0.01}}`
	h := openHostWith(t, "", `{"per_session": false, "turns": [
	  {"tool_calls": [{"id": "q1", "name": "ask_m", "arguments": "{\"question\": \"Capital of France?\"}"}],
	   "usage": {"prompt_tokens": 5, "completion_tokens": 5, "cost_usd": 0.001}},
	  `+paris+`, `+paris+`,
	  {"text": "Paris, says m", "usage": {"prompt_tokens": 5, "completion_tokens": 5, "cost_usd": 0.001}},
	  `+paris+`, `+paris+`]}`,
		"[agents.a]\n[agents.b]\n[agents.m]\nas_tool = true\nmerge = { agents = [\"a\", \"b\"] }\n", Options{})
	ctx := context.Background()
	for _, in := range []loop.RunInput{
		{SessionID: "s", RunID: "r1", Messages: []loop.Message{loop.UserMessage("ask m")}},
		{SessionID: "t", RunID: "r2", Agent: "m", Messages: []loop.Message{loop.UserMessage("Capital of France?")}},
	} {
		res, err := h.Runner().RunWith(ctx, in, func(loop.Event) {})
		if err != nil || res.Status != loop.StatusCompleted {
			t.Fatalf("%s: %v %s/%s", in.SessionID, err, res.Status, res.Reason)
		}
	}
	es, err := h.Store.Load(ctx, "s:ask:q1:merge.a")
	if err != nil || len(es) == 0 {
		t.Fatalf("a's session under m's ask: %v", err)
	}
	if d, ok := es[0].Event.Data.(*loop.RunStartedData); !ok || d.Parent != (loop.RunRef{Session: "s:ask:q1", Run: "r1:ask:q1"}) {
		t.Fatalf("a's run_started %+v", es[0].Event.Data)
	}
	rep, err := insights.Compute(ctx, h.Store, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Outcomes) != 1 {
		t.Fatalf("outcomes %+v", rep.Outcomes)
	}
	o := rep.Outcomes[0]
	if got := fmt.Sprintf("%d %s/%s %d $%.6f $%.6f %+v", rep.Runs, o.Status, o.Reason, o.Runs, o.CostUSD, rep.Cost["completed"], rep.Tokens); got !=
		"2 completed/end_turn 2 $0.042000 $0.042000 {Prompt:170 Completion:50 CachedPrompt:0 CacheWrite:0}" {
		t.Fatalf("totals %s", got)
	}
	want := "[{Agent:a Runs:2 CostUSD:0.02 Tokens:{Prompt:80 Completion:20 CachedPrompt:0 CacheWrite:0}} " +
		"{Agent:b Runs:2 CostUSD:0.02 Tokens:{Prompt:80 Completion:20 CachedPrompt:0 CacheWrite:0}} " +
		"{Agent:m Runs:1 CostUSD:0.02 Tokens:{Prompt:80 Completion:20 CachedPrompt:0 CacheWrite:0}}]"
	if got := fmt.Sprintf("%+v", rep.Nested); got != want {
		t.Fatalf("nested %s\nwant   %s", got, want)
	}
}
