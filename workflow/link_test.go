package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

func compiled(t *testing.T, defs map[string]Definition) map[string]*Workflow {
	t.Helper()
	ws := map[string]*Workflow{}
	for n, d := range defs {
		w, err := Compile(n, d)
		if err != nil {
			t.Fatal(err)
		}
		ws[n] = w
	}
	return ws
}

func TestLink_RefusesUnknownCyclicAndApprovingSubWorkflows(t *testing.T) {
	sub := func(id, name string) Step { return Step{ID: id, Workflow: name} }
	cases := []struct {
		name     string
		defs     map[string]Definition
		workflow string
		key      string
		msg      string
	}{
		{"unknown", map[string]Definition{"a": {Steps: []Step{sub("s", "ghost")}}}, "a", "steps.0.workflow", `unknown workflow "ghost"`},
		{"cycle", map[string]Definition{
			"a": {Steps: []Step{tool("t", "x", nil), sub("s", "b")}},
			"b": {Steps: []Step{sub("s", "c")}},
			"c": {Steps: []Step{sub("s", "a")}}}, "a", "steps.1.workflow", "cycle: a → b → c → a"},
		{"approval inside", map[string]Definition{
			"a": {Steps: []Step{sub("s", "b")}},
			"b": {Steps: []Step{{ID: "ok", Approval: "fine?"}}}}, "a", "steps.0.workflow", "has an approval step"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Link(compiled(t, c.defs))
			var le *LinkError
			if !errors.As(err, &le) {
				t.Fatalf("err = %v, want a LinkError", err)
			}
			if le.Workflow != c.workflow || le.Key != c.key || !strings.Contains(le.Msg, c.msg) {
				t.Fatalf("err = %s %q, want %s %s containing %q", le.Workflow, le.KeyError.Error(), c.workflow, c.key, c.msg)
			}
		})
	}
	if _, err := Compile("self", Definition{Steps: []Step{sub("s", "self")}}); err == nil || !strings.Contains(err.Error(), "cannot run itself") {
		t.Fatalf("a workflow running itself: %v", err)
	}
}

func TestEngine_AWorkflowStepRunsTheSubWorkflowPerItemAndAResumeDoesNotRepeatIt(t *testing.T) {
	r := newRig(t, loop.ToolPolicy{})
	ws := compiled(t, map[string]Definition{
		"shout": {Inputs: map[string]any{"type": "object", "required": []any{"word"}},
			Steps: []Step{{ID: "up", Tool: "upper", Arguments: map[string]any{"word": "${inputs.word}"}, Output: "loud"}}},
		"outer": {Steps: []Step{
			{ID: "collect", Tool: "split", Arguments: map[string]any{"text": "${inputs.text}"}},
			{ID: "each", Workflow: "shout", ForEach: "steps.collect.output", Arguments: map[string]any{"word": "${item}"}},
			{ID: "report", Tool: "join", Arguments: map[string]any{"words": "${steps.each.output.map(o, o.loud)}"}, Output: "joined"},
		}},
	})
	if err := Link(ws); err != nil {
		t.Fatal(err)
	}
	in := RunInput{RunID: "o1", Inputs: json.RawMessage(`{"text":"x y"}`)}
	res, err := r.engine.Run(context.Background(), ws["outer"], in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.Status != RunCompleted || res.Record.Outputs["joined"] != "X-Y" {
		t.Fatalf("run %s %v (%s)", res.Record.Status, res.Record.Outputs, res.Record.Error)
	}
	// Each item is a stored run of the sub-workflow, id RUNID.STEP.ITEM.
	child, ok, err := LoadRecord(context.Background(), r.store, "shout", "o1.each.1")
	if err != nil || !ok || child.Status != RunCompleted || child.Outputs["loud"] != "Y" {
		t.Fatalf("child record %+v ok=%v err=%v", child, ok, err)
	}
	// Forget the parent's fan-out items: a resume runs the items' sub-workflows again,
	// which find their runs completed and call nothing.
	rec, _, _ := LoadRecord(context.Background(), r.store, "outer", "o1")
	rec.Status, rec.Steps["each"].Status, rec.Steps["each"].Items = RunRunning, StatusRunning, nil
	delete(rec.Steps, "report")
	if err := saveRecord(context.Background(), r.store, rec); err != nil {
		t.Fatal(err)
	}
	before := r.count("upper")
	res, err = r.engine.Run(context.Background(), ws["outer"], RunInput{RunID: "o1"}, nil)
	if err != nil || res.Record.Status != RunCompleted || res.Record.Outputs["joined"] != "X-Y" {
		t.Fatalf("resume %+v %v", res.Record, err)
	}
	if r.count("upper") != before {
		t.Fatalf("the resume called upper %d more times", r.count("upper")-before)
	}
}

func TestEngine_AFailedSubWorkflowFailsItsStepWithTheSubRunsError(t *testing.T) {
	r := newRig(t, loop.ToolPolicy{})
	ws := compiled(t, map[string]Definition{
		"strict": {Inputs: map[string]any{"type": "object", "required": []any{"word"}},
			Steps: []Step{{ID: "up", Tool: "upper", Arguments: map[string]any{"word": "${inputs.word}"}}}},
		"outer": {Steps: []Step{{ID: "call", Workflow: "strict", Arguments: map[string]any{"other": 1}}}},
	})
	if err := Link(ws); err != nil {
		t.Fatal(err)
	}
	res, err := r.engine.Run(context.Background(), ws["outer"], RunInput{RunID: "o2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.Status != RunFailed || !strings.Contains(res.Record.Error, "step call failed") || !strings.Contains(res.Record.Error, "word") {
		t.Fatalf("run %s: %s", res.Record.Status, res.Record.Error)
	}
	if r.count("upper") != 0 {
		t.Fatal("the sub-workflow ran with inputs its schema refuses")
	}
}
