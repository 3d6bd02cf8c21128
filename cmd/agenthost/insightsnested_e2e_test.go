package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// `insights` counts a merge agent's asks and an ask_NAME's run once, over SQLite (the
// run_started's parent read back from the store): the agent asks m (ask_m), which
// merges a and b. One run of 10+100+10 tokens and $0.022, every nested run's spend in
// it; a, b and m listed per agent as nested runs with their share, in JSON and in the
// table. (One run: each `agenthost run` starts the scripted provider afresh.)
func TestE2E_InsightsCountsAMergeAgentsNestedRunsOnce(t *testing.T) {
	paris := `{"text": "Paris", "usage": {"prompt_tokens": 40, "completion_tokens": 10, "cost_usd": 0.01}}`
	e := newEnv(t, "", "\n[agents.a]\n[agents.b]\n[agents.m]\nas_tool = true\nmerge = { agents = [\"a\", \"b\"] }\n",
		[2]string{"scripted", `{"per_session": false, "turns": [
	  {"tool_calls": [{"id": "q1", "name": "ask_m", "arguments": "{\"question\": \"Capital of France?\"}"}],
	   "usage": {"prompt_tokens": 5, "completion_tokens": 5, "cost_usd": 0.001}},
	  ` + paris + `, ` + paris + `,
	  {"text": "Paris, says m", "usage": {"prompt_tokens": 5, "completion_tokens": 5, "cost_usd": 0.001}}]}`})
	if r := e.agenthost(t, "run", "--new", "--session", "s", "ask m"); r.code != 0 || !strings.Contains(r.stdout, "Paris, says m") {
		t.Fatalf("run: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := e.agenthost(t, "sessions", "show", "s:ask:q1:merge.a", "--json"); r.code != 0 ||
		!strings.Contains(r.stdout, `"parent":{"session":"s:ask:q1","run":"`) {
		t.Fatalf("a's stored run_started names no parent: exit %d\n%s", r.code, r.stdout)
	}
	r := e.agenthost(t, "insights", "--json")
	var rep struct {
		Runs   int                `json:"runs"`
		Cost   map[string]float64 `json:"cost_usd_by_status"`
		Tokens struct{ Prompt, Completion int }
		Nested []struct {
			Agent   string
			Runs    int
			CostUSD float64 `json:"cost_usd"`
			Tokens  struct{ Prompt, Completion int }
		} `json:"nested"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
		t.Fatalf("insights --json: %v\n%s", err, r.stdout)
	}
	got := fmt.Sprintf("%d $%.6f %+v |", rep.Runs, rep.Cost["completed"], rep.Tokens)
	for _, n := range rep.Nested {
		got += fmt.Sprintf(" %s %d $%.6f %+v", n.Agent, n.Runs, n.CostUSD, n.Tokens)
	}
	if want := "1 $0.022000 {Prompt:90 Completion:30} | a 1 $0.010000 {Prompt:40 Completion:10} b 1 $0.010000 {Prompt:40 Completion:10} m 1 $0.020000 {Prompt:80 Completion:20}"; got != want {
		t.Fatalf("insights:\n got %s\nwant %s", got, want)
	}
	r = e.agenthost(t, "insights")
	if r.code != 0 || !strings.Contains(r.stdout, "1 run in the last 7d") || !strings.Contains(r.stdout,
		"AGENT  NESTED RUNS  COST (IN THEIR CALLERS')  PROMPT TOKENS  COMPLETION TOKENS\n"+
			"a      1            $0.0100                   40             10\n"+
			"b      1            $0.0100                   40             10\n"+
			"m      1            $0.0200                   80             20\n") {
		t.Fatalf("insights: exit %d\n%s", r.code, r.stdout)
	}
}
