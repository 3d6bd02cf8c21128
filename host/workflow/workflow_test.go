package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// pipeline is the seed's four steps: collect → preprocess → analyse each item (in
// parallel) → report, with a branch a condition leaves out.
var pipeline = Definition{
	Inputs: map[string]any{"type": "object", "required": []any{"topic"}},
	Steps: []Step{
		{ID: "collect", Tool: "fetch", Args: map[string]any{"topic": "${inputs.topic}"}},
		{ID: "preprocess", Tool: "clean", Args: map[string]any{"rows": "${steps.collect.output.rows}"}, DependsOn: []string{"collect"}},
		{ID: "analyse", Tool: "score", Args: map[string]any{"row": "${item}", "label": "row ${index}: ${item}"}, ForEach: "steps.preprocess.output", DependsOn: []string{"preprocess"}},
		{ID: "alert", Tool: "page", If: "size(steps.preprocess.output) > 10", DependsOn: []string{"preprocess"}},
		{ID: "after_alert", Tool: "page", DependsOn: []string{"alert"}},
		{ID: "report", Prompt: "Report on ${inputs.topic}: ${steps.analyse.output}", DependsOn: []string{"analyse"}},
	},
	Output: "{'report': steps.report.output, 'alerted': steps.alert.status}",
}

type fakeHost struct {
	mu    sync.Mutex
	calls []string
	block chan struct{} // when set, score blocks until closed or ctx ends
}

func (f *fakeHost) opts(store StateStore) Options {
	return Options{State: store, Parallel: 3,
		Call: func(ctx context.Context, tool string, args []byte, session string) (loop.ToolResult, error) {
			f.mu.Lock()
			f.calls = append(f.calls, tool+" "+string(args))
			block := f.block
			f.mu.Unlock()
			switch tool {
			case "fetch":
				return loop.TextResult(`{"rows": [" a ", " b ", " c "]}`), nil
			case "clean":
				var in struct{ Rows []string }
				json.Unmarshal(args, &in)
				for i := range in.Rows {
					in.Rows[i] = strings.TrimSpace(in.Rows[i])
				}
				b, _ := json.Marshal(in.Rows)
				return loop.TextResult(string(b)), nil
			case "score":
				var in struct{ Row string }
				json.Unmarshal(args, &in)
				if block != nil && in.Row == "c" {
					select {
					case <-block:
					case <-ctx.Done():
						return loop.ToolResult{}, ctx.Err()
					}
				}
				return loop.TextResult(strings.ToUpper(in.Row)), nil
			}
			return loop.ErrorResult("Error: unexpected tool " + tool), nil
		},
		Prompt: func(ctx context.Context, prompt, session string) (string, error) {
			f.mu.Lock()
			f.calls = append(f.calls, "prompt "+prompt)
			f.mu.Unlock()
			return "report: " + prompt, nil
		},
	}
}

func compileT(t *testing.T, d Definition) *Workflow {
	t.Helper()
	w, err := Compile("pipe", d, func(name string) bool { return slices.Contains([]string{"fetch", "clean", "score", "page"}, name) })
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// The DAG runs in dependency order with arguments from earlier outputs; for_each fans
// out over a list; a false condition skips its step and what depends on it; the output
// expression sees it all.
func TestAWorkflowRunsItsDAG(t *testing.T) {
	w := compileT(t, pipeline)
	f := &fakeHost{}
	var events []string
	opts := f.opts(loop.NewMemoryStore())
	opts.Emit = func(e Event) { events = append(events, e.Type+" "+e.Step+" "+e.Status) }
	res, err := Run(context.Background(), w, "r1", map[string]any{"topic": "tea"}, opts)
	if err != nil || res.Status != StatusDone {
		t.Fatalf("run: %+v %v", res, err)
	}
	want := map[string]any{"report": `report: Report on tea: ["A","B","C"]`, "alerted": "skipped"}
	if !sameJSON(res.Output, want) {
		t.Fatalf("output = %v, want %v", res.Output, want)
	}
	if f.calls[0] != `fetch {"topic":"tea"}` || f.calls[1] != `clean {"rows":[" a "," b "," c "]}` {
		t.Fatalf("calls = %q", f.calls)
	}
	if !slices.Contains(f.calls, `score {"label":"row 1: b","row":"b"}`) || slices.ContainsFunc(f.calls, func(c string) bool { return strings.HasPrefix(c, "page") }) {
		t.Fatalf("calls = %q", f.calls)
	}
	if !slices.Contains(events, "step_finished after_alert skipped") {
		t.Fatalf("the alert's dependent was not skipped: %q", events)
	}
}

// A run stopped mid-way (its context ended while an item ran) resumes under the same
// id without calling a finished step or item again; resuming with other inputs is
// refused.
func TestAStoppedWorkflowResumesWithoutRepeatingFinishedSteps(t *testing.T) {
	w := compileT(t, pipeline)
	store := loop.NewMemoryStore()
	f := &fakeHost{block: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	opts := f.opts(store)
	itemsDone := 0
	opts.Emit = func(e Event) {
		if e.Type == "step_finished" && e.Step == "analyse" && e.Item != nil {
			if itemsDone++; itemsDone == 2 {
				cancel() // items a and b have ended; c blocks until now
			}
		}
	}
	if _, err := Run(ctx, w, "r2", map[string]any{"topic": "tea"}, opts); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped run: %v", err)
	}
	first := len(f.calls)
	f2 := &fakeHost{}
	if _, err := Run(context.Background(), w, "r2", map[string]any{"topic": "coffee"}, f2.opts(store)); !errors.Is(err, ErrInputsDiffer) {
		t.Fatalf("other inputs: %v", err)
	}
	res, err := Run(context.Background(), w, "r2", nil, f2.opts(store))
	if err != nil || res.Status != StatusDone {
		t.Fatalf("resumed: %+v %v", res, err)
	}
	want := []string{`score {"label":"row 2: c","row":"c"}`, `prompt Report on tea: ["A","B","C"]`}
	if !slices.Equal(f2.calls, want) || first != 5 {
		t.Fatalf("first run made %d calls %q; the resumed run %q, want %q", first, f.calls, f2.calls, want)
	}
	// A finished run answers from the store.
	f3 := &fakeHost{}
	if res, err := Run(context.Background(), w, "r2", nil, f3.opts(store)); err != nil || res.Status != StatusDone || len(f3.calls) != 0 {
		t.Fatalf("finished run again: %+v %v %q", res, err, f3.calls)
	}
}

// A failing step fails the run with its error after retries; no step after it starts.
func TestAFailingStepFailsTheRunAfterItsRetries(t *testing.T) {
	w := compileT(t, Definition{Steps: []Step{{ID: "a", Tool: "page", Retry: 2}, {ID: "b", Tool: "fetch", DependsOn: []string{"a"}}}})
	f := &fakeHost{}
	res, err := Run(context.Background(), w, "r3", nil, f.opts(loop.NewMemoryStore()))
	if err != nil || res.Status != StatusFailed || res.Error != "step a: Error: unexpected tool page" || len(f.calls) != 3 {
		t.Fatalf("res %+v, err %v, calls %q", res, err, f.calls)
	}
}

// What is wrong with a definition is found before anything runs, at its key.
func TestDefinitionErrorsNameTheirKey(t *testing.T) {
	for want, d := range map[string]Definition{
		"workflows.pipe.steps: a cycle: a → b → a":               {Steps: []Step{{ID: "a", Tool: "page", DependsOn: []string{"b"}}, {ID: "b", Tool: "page", DependsOn: []string{"a"}}}},
		`workflows.pipe.steps.0.depends_on: no other step "x"`:   {Steps: []Step{{ID: "a", Tool: "page", DependsOn: []string{"x"}}}},
		`workflows.pipe.steps.0.tool: no tool "nope"`:            {Steps: []Step{{ID: "a", Tool: "nope"}}},
		"workflows.pipe.steps.0: a step has exactly one of tool": {Steps: []Step{{ID: "a", Tool: "page", Prompt: "x"}}},
		"workflows.pipe.steps.0.if: CEL \"steps.\"":              {Steps: []Step{{ID: "a", Tool: "page", If: "steps."}}},
		`workflows.pipe.steps.0.args.q: "${inputs.x": ${ without its }`:        {Steps: []Step{{ID: "a", Tool: "page", Args: map[string]any{"q": "${inputs.x"}}}},
		`workflows.pipe.steps.1.id: duplicate id "a"`:            {Steps: []Step{{ID: "a", Tool: "page"}, {ID: "a", Tool: "page"}}},
		`workflows.pipe.steps.0.id: id "1a"`:                     {Steps: []Step{{ID: "1a", Tool: "page"}}},
		`workflows.pipe.steps.0.timeout: "soon"`:                 {Steps: []Step{{ID: "a", Tool: "page", Timeout: "soon"}}},
	} {
		_, err := Compile("pipe", d, func(n string) bool { return n == "page" })
		var ke *KeyError
		if !errors.As(err, &ke) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("got %v, want %s…", err, want)
		}
	}
	_ = fmt.Sprint
}
