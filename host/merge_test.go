package host

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/telemetry"
	"github.com/agenthost/agenthost/workflow"
)

// A prompt step with agents asks each the same prompt and merges their answers: a vote
// takes the answer most gave, a judge agent merges the attributed answers, concat keeps
// each under its agent's name; the output lists every agent's answer.
func TestAPromptStepAsksSeveralAgentsAndMergesTheirAnswers(t *testing.T) {
	agents := ""
	for _, a := range []string{"a", "b", "c"} {
		agents += "[agents." + a + "]\nsystem_prompt = \"You are " + a + ".\"\n"
	}
	h := openHostWith(t, "", `{"per_session": false, "turns": [
	  {"expect": {"contains": "Capital of France?"}, "text": "Paris"},
	  {"text": " paris. "},
	  {"text": "Lyon"},
	  {"text": "Paris"},
	  {"text": "Lyon"},
	  {"expect": {"contains": "[a]\nParis\n\n[b]\nLyon"}, "text": "Paris (Lyon is not the capital)"},
	  {"text": "x"},
	  {"text": "y"}]}`, agents+`
[workflows.v]
[[workflows.v.steps]]
id = "ask"
prompt = "Capital of France?"
agents = ["a", "b", "c"]
merge = "vote"
output = "out"
[workflows.j]
[[workflows.j.steps]]
id = "ask"
prompt = "Capital of France?"
agents = ["a", "b"]
merge = "judge"
judge = "c"
output = "out"
[workflows.k]
[[workflows.k.steps]]
id = "ask"
prompt = "Letters?"
agents = ["a", "b"]
output = "out"
`, Options{})
	run := func(name string) map[string]any {
		w, _ := h.Manifest.Workflow(name)
		res, err := h.Workflows().Run(context.Background(), w, workflow.RunInput{}, nil)
		if err != nil || res.Record.Status != workflow.RunCompleted {
			t.Fatalf("workflow %s: %v %+v", name, err, res.Record)
		}
		var out map[string]any
		b, _ := json.Marshal(res.Record.Outputs["out"])
		json.Unmarshal(b, &out)
		return out
	}
	if out := run("v"); out["answer"] != "Paris" || out["votes"] != float64(2) || len(out["answers"].([]any)) != 3 {
		t.Fatalf("vote: %v", out)
	}
	if out := run("j"); out["answer"] != "Paris (Lyon is not the capital)" || len(out["answers"].([]any)) != 2 {
		t.Fatalf("judge: %v", out)
	}
	if out := run("k"); out["answer"] != "[a]\nx\n\n[b]\ny" {
		t.Fatalf("concat: %v", out)
	}

	for steps, want := range map[string]string{
		`prompt = "q"` + "\nagents = [\"a\"]":                           "agents asks several agents: name at least two",
		`prompt = "q"` + "\nagents = [\"a\", \"nope\"]":                 `unknown agent "nope"`,
		`prompt = "q"` + "\nagents = [\"a\", \"b\"]\nmerge = \"judge\"": `merge = "judge" and judge = "AGENT" go together`,
		`prompt = "q"` + "\nagents = [\"a\", \"b\"]\nmerge = \"sum\"":   `merge "sum": want concat, vote or judge`,
		`tool = "x"` + "\nmerge = \"vote\"":                             "merge and judge are for a prompt step with agents",
		`prompt = "q"` + "\nagent = \"a\"\nagents = [\"a\", \"b\"]":     "agent (one) or agents (several), not both",
	} {
		_, err := openHostErr(t, "", `{"turns": []}`, agents+"[workflows.w]\n[[workflows.w.steps]]\nid = \"s\"\n"+steps+"\n", Options{})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "agent.toml:") {
			t.Errorf("%s:\n got %v\nwant %q", steps, err, want)
		}
	}
}

// An [agents.NAME] merge agent asks the agents it lists the run's question, each in a
// session of its own that keeps its conversation, and answers with their answers merged
// as a workflow step merges them (workflow.Merge): a vote, here; its run is an ordinary
// run through the door, stored in its session. The merge table is checked at its key.
func TestAMergeAgentAsksItsAgentsAndAnswersWithTheirMergedAnswers(t *testing.T) {
	tel, err := telemetry.New(context.Background(), telemetry.Options{}) // no exporter: a caller's trace is continued
	if err != nil {
		t.Fatal(err)
	}
	agents := ""
	for _, a := range []string{"a", "b", "c"} {
		agents += "[agents." + a + "]\nsystem_prompt = \"You are " + a + ".\"\n"
	}
	h := openHostWith(t, "", `{"per_session": false, "turns": [
	  {"expect": {"contains": "Capital of France?"}, "text": "Paris"},
	  {"text": "Lyon"},
	  {"text": "paris."},
	  {"expect": {"messages": 4, "contains": "And of Italy?"}, "text": "Rome"},
	  {"text": "Rome"},
	  {"text": "Milan"},
	  {"text": "Madrid"}, {"text": "Madrid"}, {"text": "Madrid"}]}`, agents+`[agents.m]
merge = { agents = ["a", "b", "c"], by = "vote" }
`, Options{Telemetry: tel})
	ask := func(q string) string {
		res, err := h.Runner().RunWith(context.Background(), loop.RunInput{SessionID: "s", Agent: "m", Messages: []loop.Message{loop.UserMessage(q)}}, nil)
		if err != nil || res.Status != loop.StatusCompleted || res.Final == nil {
			t.Fatalf("run m: %v %+v", err, res)
		}
		return res.Final.Text()
	}
	if got := ask("Capital of France?"); got != "Paris" {
		t.Fatalf("vote: %q", got)
	}
	if got := ask("And of Italy?"); got != "Rome" { // a's second turn sees its first: system, user, answer, user
		t.Fatalf("second vote: %q", got)
	}
	entries, err := h.Store.Load(context.Background(), "s:merge.a")
	if err != nil || len(entries) == 0 {
		t.Fatalf("a's session: %v %d", err, len(entries))
	}
	// A run continuing a caller's trace: the asked agents' runs are in the same trace.
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	tctx := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true}))
	if _, err := h.Runner().RunWith(tctx, loop.RunInput{SessionID: "traced", Agent: "m", Messages: []loop.Message{loop.UserMessage("Capital of Spain?")}}, nil); err != nil {
		t.Fatal(err)
	}
	for _, sess := range []string{"traced", "traced:merge.b"} {
		es, err := h.Store.Load(context.Background(), sess)
		if err != nil || len(es) == 0 {
			t.Fatalf("%s: %v %d", sess, err, len(es))
		}
		for _, e := range es {
			if e.Event != nil && e.Event.TraceID != tid.String() {
				t.Fatalf("%s: event %s in trace %q, want %s", sess, e.Event.Type, e.Event.TraceID, tid)
			}
		}
	}

	for merge, want := range map[string]string{
		`{ agents = ["a"] }`:                                 "agents.m.merge.agents: a merge asks several agents: name at least two",
		`{ agents = ["a", "nope"] }`:                         `agents.m.merge.agents: no agent "nope"`,
		`{ agents = ["a", "m"] }`:                            `agents.m.merge.agents: agent "m" merges its own answer`,
		`{ agents = ["a", "a"] }`:                            `agents.m.merge.agents: agent "a": each agent is named once`,
		`{ agents = ["a", "b"], by = "sum" }`:                `agents.m.merge.by: "sum": want concat, vote or judge`,
		`{ agents = ["a", "b"], by = "judge" }`:              `agents.m.merge.judge: by = "judge" and judge = "AGENT" go together`,
		`{ agents = ["a", "b"], by = "judge", judge = "x" }`: `agents.m.merge.judge: no agent "x"`,
	} {
		_, err := openHostErr(t, "", `{"turns": []}`, agents+"[agents.m]\nmerge = "+merge+"\n", Options{})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "agent.toml:") {
			t.Errorf("merge = %s: %v, want %q", merge, err, want)
		}
	}
	_, err = openHostErr(t, "", `{"turns": []}`, agents+"[agents.m]\nmerge = { agents = [\"a\", \"b\"] }\n[agents.n]\nmerge = { agents = [\"a\", \"m\"] }\n", Options{})
	if err == nil || !strings.Contains(err.Error(), `agent "m" merges too`) {
		t.Errorf("a merge of a merge: %v", err)
	}
	_, err = openHostErr(t, "", `{"turns": []}`, agents+"[agents.m]\nmodel = \"m2\"\nmerge = { agents = [\"a\", \"b\"] }\n", Options{})
	if err == nil || !strings.Contains(err.Error(), "agents.m.merge: a merge agent calls no model of its own") {
		t.Errorf("a merge agent with a model: %v", err)
	}
}
