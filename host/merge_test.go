package host

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

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
