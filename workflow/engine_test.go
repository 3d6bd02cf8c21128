package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// rig is a real loop.Agent with Go tools and a memory store: every step goes through
// the agent's one tool pipeline (DirectCall) and is stored in the step's session.
type rig struct {
	store  *loop.MemoryStore
	engine *Engine
	calls  sync.Map // tool name → *atomic.Int64
	active atomic.Int64
	peak   atomic.Int64
	gate   chan struct{} // when set, "slow" waits for it
}

func newRig(t *testing.T, policy loop.ToolPolicy) *rig {
	t.Helper()
	return newRigOn(t, policy, nil)
}

// newRigOn is newRig whose agent and engine use wrap(the memory store) when wrap is set.
func newRigOn(t *testing.T, policy loop.ToolPolicy, wrap func(*loop.MemoryStore) loop.SessionStore) *rig {
	t.Helper()
	r := &rig{store: loop.NewMemoryStore()}
	var st loop.SessionStore = r.store
	if wrap != nil {
		st = wrap(r.store)
	}
	obj := json.RawMessage(`{"type":"object"}`)
	count := func(name string) {
		c, _ := r.calls.LoadOrStore(name, new(atomic.Int64))
		c.(*atomic.Int64).Add(1)
	}
	fail := atomic.Int64{}
	tools, err := loop.NewToolSet(
		loop.FuncTool{ToolSpec: loop.ToolSpec{Name: "split", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
			Fn: func(_ context.Context, c loop.ToolCall) (loop.ToolResult, error) {
				count("split")
				var a struct{ Text string }
				_ = json.Unmarshal([]byte(c.Arguments), &a)
				b, _ := json.Marshal(strings.Fields(a.Text))
				return loop.TextResult(string(b)), nil
			}},
		loop.FuncTool{ToolSpec: loop.ToolSpec{Name: "upper", InputSchema: obj},
			Fn: func(ctx context.Context, c loop.ToolCall) (loop.ToolResult, error) {
				count("upper")
				n := r.active.Add(1)
				defer r.active.Add(-1)
				for p := r.peak.Load(); n > p && !r.peak.CompareAndSwap(p, n); p = r.peak.Load() {
				}
				if r.gate != nil {
					select {
					case <-r.gate:
					case <-ctx.Done():
						return loop.ToolResult{}, ctx.Err()
					}
				}
				var a struct{ Word string }
				_ = json.Unmarshal([]byte(c.Arguments), &a)
				return loop.TextResult(strings.ToUpper(a.Word)), nil
			}},
		loop.FuncTool{ToolSpec: loop.ToolSpec{Name: "join", InputSchema: obj},
			Fn: func(_ context.Context, c loop.ToolCall) (loop.ToolResult, error) {
				count("join")
				var a struct{ Words []string }
				_ = json.Unmarshal([]byte(c.Arguments), &a)
				return loop.TextResult(strings.Join(a.Words, "-")), nil
			}},
		loop.FuncTool{ToolSpec: loop.ToolSpec{Name: "flaky", InputSchema: obj},
			Fn: func(context.Context, loop.ToolCall) (loop.ToolResult, error) {
				count("flaky")
				if fail.Add(1) <= 2 {
					return loop.ErrorResult("not yet"), nil
				}
				return loop.TextResult(`{"ok":true}`), nil
			}},
	)
	if err != nil {
		t.Fatal(err)
	}
	agent, err := loop.New(loop.Config{Name: "wf", Model: noModel{}, Tools: tools, Store: st, ToolPolicy: policy})
	if err != nil {
		t.Fatal(err)
	}
	r.engine = &Engine{Store: st, Exec: AgentExecutor{Agent: agent}, RetryDelay: time.Millisecond}
	return r
}

func (r *rig) count(name string) int64 {
	c, ok := r.calls.Load(name)
	if !ok {
		return 0
	}
	return c.(*atomic.Int64).Load()
}

type noModel struct{}

func (noModel) Stream(context.Context, loop.Request) (loop.Stream, error) {
	return nil, errors.New("no model in these tests")
}

// pipeline: split → upper (for_each, parallel) → join; "shout" runs only when asked.
func pipeline(t *testing.T, maxPar int) *Workflow {
	t.Helper()
	w, err := Compile("words", Definition{
		Inputs:      map[string]any{"type": "object", "required": []any{"text"}, "properties": map[string]any{"text": map[string]any{"type": "string"}, "shout": map[string]any{"type": "boolean"}}},
		MaxParallel: maxPar,
		Steps: []Step{
			{ID: "collect", Tool: "split", Arguments: map[string]any{"text": "${inputs.text}"}},
			{ID: "analyse", Tool: "upper", ForEach: "steps.collect.output", Arguments: map[string]any{"word": "${item}"}},
			{ID: "report", Tool: "join", Arguments: map[string]any{"words": "${steps.analyse.output}"}, Output: "joined"},
			{ID: "shout", Tool: "upper", If: "has(inputs.shout) && inputs.shout", Arguments: map[string]any{"word": "${steps.report.output}"}, Output: "shouted"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestEngine_RunsTheDAGFanningOutInParallelAndSkipsAFalseCondition(t *testing.T) {
	r := newRig(t, loop.ToolPolicy{})
	var mu sync.Mutex
	var events []string
	res, err := r.engine.Run(context.Background(), pipeline(t, 3), RunInput{RunID: "r1", Inputs: json.RawMessage(`{"text":"a b c d"}`)},
		func(e Event) { mu.Lock(); events = append(events, e.Type+":"+e.Step+":"+e.Status); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	rec := res.Record
	if rec.Status != RunCompleted {
		t.Fatalf("status %s (%s)", rec.Status, rec.Error)
	}
	if rec.Outputs["joined"] != "A-B-C-D" || rec.Outputs["shouted"] != nil {
		t.Fatalf("outputs %v", rec.Outputs)
	}
	if s := rec.Steps["shout"]; s.Status != StatusSkipped {
		t.Fatalf("shout %+v", s)
	}
	if r.count("upper") != 4 || r.count("split") != 1 || r.count("join") != 1 {
		t.Fatalf("calls upper=%d split=%d join=%d", r.count("upper"), r.count("split"), r.count("join"))
	}
	want := []string{"workflow_started::", "step_started:collect:", "step_finished:collect:ok", "step_started:analyse:",
		"step_finished:analyse:ok", "step_started:report:", "step_finished:report:ok", "step_finished:shout:skipped", "workflow_finished::completed"}
	if strings.Join(events, " ") != strings.Join(want, " ") {
		t.Fatalf("events\n got %v\nwant %v", events, want)
	}
	// Every call went through the pipeline: stored as a run of the item's own session.
	if n := toolCalls(t, r.store, "workflow:words:r1~analyse~2"); n != 1 {
		t.Fatalf("session workflow:words:r1~analyse~2 holds %d tool calls", n)
	}
}

func TestEngine_FanOutIsBoundedByMaxParallel(t *testing.T) {
	r := newRig(t, loop.ToolPolicy{})
	r.gate = make(chan struct{})
	done := make(chan Result, 1)
	go func() {
		res, _ := r.engine.Run(context.Background(), pipeline(t, 2), RunInput{Inputs: json.RawMessage(`{"text":"a b c d e"}`)}, nil)
		done <- res
	}()
	deadline := time.Now().Add(10 * time.Second)
	for r.active.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("two items never ran at once")
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(r.gate)
	res := <-done
	if res.Record.Status != RunCompleted || r.peak.Load() != 2 {
		t.Fatalf("status %s, peak %d (want 2)", res.Record.Status, r.peak.Load())
	}
}

func TestEngine_ResumeDoesNotRepeatFinishedStepsOrItems(t *testing.T) {
	r := newRig(t, loop.ToolPolicy{})
	r.gate = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	w := pipeline(t, 1)
	done := make(chan Result, 1)
	go func() {
		res, _ := r.engine.Run(ctx, w, RunInput{RunID: "r2", Inputs: json.RawMessage(`{"text":"a b c"}`)}, nil)
		done <- res
	}()
	// Let one item end, then abort the run while the next is in its call.
	r.gate <- struct{}{}
	deadline := time.Now().Add(10 * time.Second)
	for r.count("upper") < 2 {
		if time.Now().After(deadline) {
			t.Fatal("second item never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if res := <-done; res.Record.Status != RunAborted {
		t.Fatalf("status %s", res.Record.Status)
	}
	rec, _, _ := LoadRecord(context.Background(), r.store, "words", "r2")
	ended := 0
	for _, it := range rec.Steps["analyse"].Items {
		if it != nil && it.Status == StatusOK {
			ended++
		}
	}
	if rec.Steps["collect"].Status != StatusOK || rec.Steps["analyse"].Status != StatusRunning || ended != 1 {
		b, _ := json.Marshal(rec)
		t.Fatalf("stored %s", b)
	}
	r.gate = nil
	res, err := r.engine.Run(context.Background(), w, RunInput{RunID: "r2"}, nil)
	if err != nil || res.Record.Status != RunCompleted || res.Record.Outputs["joined"] != "A-B-C" {
		t.Fatalf("resume: %v %+v", err, res.Record)
	}
	// split once; upper: one item ended, one cut (run again on resume), one more → 4; join once.
	if r.count("split") != 1 || r.count("upper") != 4 || r.count("join") != 1 {
		t.Fatalf("calls split=%d upper=%d join=%d", r.count("split"), r.count("upper"), r.count("join"))
	}
	// A completed run is only reported again.
	if _, err := r.engine.Run(context.Background(), w, RunInput{RunID: "r2"}, nil); err != nil || r.count("join") != 1 {
		t.Fatalf("rerun of a completed run called tools: %v", err)
	}
}

func TestEngine_RetryRunsAFailedStepAgain(t *testing.T) {
	r := newRig(t, loop.ToolPolicy{})
	w, err := Compile("f", Definition{Steps: []Step{{ID: "x", Tool: "flaky", Retry: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.engine.Run(context.Background(), w, RunInput{}, nil)
	if err != nil || res.Record.Status != RunCompleted || r.count("flaky") != 3 || res.Record.Steps["x"].Attempts != 3 {
		t.Fatalf("%v %+v calls=%d", err, res.Record, r.count("flaky"))
	}
	if out := res.Record.Outputs["x"].(map[string]any); out["ok"] != true {
		t.Fatalf("output %v", out)
	}
}

func TestEngine_AFailedStepFailsTheRunAndStopsItsDependents(t *testing.T) {
	r := newRig(t, loop.ToolPolicy{})
	w, _ := Compile("f", Definition{Steps: []Step{{ID: "x", Tool: "flaky"}, {ID: "y", Tool: "join", DependsOn: []string{"x"}}}})
	res, err := r.engine.Run(context.Background(), w, RunInput{}, nil)
	if err != nil || res.Record.Status != RunFailed || res.Record.Error != "step x failed: not yet" || r.count("join") != 0 {
		t.Fatalf("%v %+v", err, res.Record)
	}
}

func TestEngine_ToolPolicyAppliesToSteps(t *testing.T) {
	// require_approval with no approver: the pipeline refuses the call, so the step fails.
	r := newRig(t, loop.ToolPolicy{RequireApproval: []string{"join"}})
	w, _ := Compile("p", Definition{Steps: []Step{{ID: "j", Tool: "join"}}})
	res, _ := r.engine.Run(context.Background(), w, RunInput{}, nil)
	if res.Record.Status != RunFailed || r.count("join") != 0 || !strings.Contains(res.Record.Error, "approv") {
		t.Fatalf("%+v", res.Record)
	}
}

func TestEngine_ApprovalStepInterruptsAndAResumeDecides(t *testing.T) {
	r := newRig(t, loop.ToolPolicy{})
	w, err := Compile("a", Definition{Steps: []Step{
		{ID: "collect", Tool: "split", Arguments: map[string]any{"text": "x y"}},
		{ID: "ok", Approval: "Publish ${size(steps.collect.output)} words?"},
		{ID: "publish", Tool: "join", Arguments: map[string]any{"words": "${steps.collect.output}"}, DependsOn: []string{"ok"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var prompt string
	res, _ := r.engine.Run(context.Background(), w, RunInput{RunID: "a1"}, func(e Event) {
		if e.Type == EventStepWaiting {
			prompt = e.Prompt
		}
	})
	if res.Record.Status != RunInterrupted || strings.Join(res.Waiting, ",") != "ok" || prompt != "Publish 2 words?" || r.count("join") != 0 {
		t.Fatalf("%+v waiting=%v prompt=%q", res.Record, res.Waiting, prompt)
	}
	res, _ = r.engine.Run(context.Background(), w, RunInput{RunID: "a1", Approvals: map[string]Decision{"ok": {Approved: true}}}, nil)
	if res.Record.Status != RunCompleted || res.Record.Outputs["publish"] != "x-y" || r.count("split") != 1 {
		t.Fatalf("%+v", res.Record)
	}
	// Rejected: the dependent is skipped, the run completes.
	res, _ = r.engine.Run(context.Background(), w, RunInput{RunID: "a2"}, nil)
	res, _ = r.engine.Run(context.Background(), w, RunInput{RunID: "a2", Approvals: map[string]Decision{"ok": {Approved: false, Comment: "no"}}}, nil)
	if res.Record.Status != RunCompleted || res.Record.Steps["publish"].Status != StatusSkipped || res.Record.Steps["ok"].Status != StatusRejected {
		t.Fatalf("%+v", res.Record.Steps)
	}
}

func TestEngine_BadInputsAreRefusedBeforeAnythingRuns(t *testing.T) {
	r := newRig(t, loop.ToolPolicy{})
	for _, in := range []string{`{"text": 5}`, `{}`, `not json`} {
		_, err := r.engine.Run(context.Background(), pipeline(t, 1), RunInput{Inputs: json.RawMessage(in)}, nil)
		if !errors.Is(err, ErrInputs) {
			t.Fatalf("%s: err = %v", in, err)
		}
	}
	if r.count("split") != 0 {
		t.Fatal("a tool ran")
	}
}

func toolCalls(t *testing.T, st loop.SessionStore, session string) int {
	t.Helper()
	es, err := st.Load(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if e.Event != nil && e.Event.Type == loop.EventToolCall {
			n++
		}
	}
	return n
}

func TestEngine_ARunInProgressIsNotRunTwiceAtOnce(t *testing.T) {
	r := newRig(t, loop.ToolPolicy{})
	r.gate = make(chan struct{})
	w := pipeline(t, 1)
	done := make(chan Result, 1)
	go func() {
		res, _ := r.engine.Run(context.Background(), w, RunInput{RunID: "b1", Inputs: json.RawMessage(`{"text":"a"}`)}, nil)
		done <- res
	}()
	deadline := time.Now().Add(10 * time.Second)
	for r.count("upper") < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the first run never reached its fan-out")
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, err := r.engine.Run(context.Background(), w, RunInput{RunID: "b1"}, nil)
	if !errors.Is(err, loop.ErrSessionBusy) {
		t.Fatalf("second run of b1: %v", err)
	}
	close(r.gate)
	if res := <-done; res.Record.Status != RunCompleted || r.count("split") != 1 {
		t.Fatalf("%+v", res.Record)
	}
}

func TestEngine_ForEachOverANonListOrTooManyItemsFailsTheStep(t *testing.T) {
	r := newRig(t, loop.ToolPolicy{})
	for in, want := range map[string]string{`{"xs": "abc"}`: "for_each is not a list (got string)", `{"n": 10001}`: "for_each gave 10001 items, more than 10000"} {
		w, err := Compile("f", Definition{Steps: []Step{{ID: "x", Tool: "upper", ForEach: `has(inputs.xs) ? inputs.xs : lists.range(int(inputs.n))`}}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.engine.Run(context.Background(), w, RunInput{Inputs: json.RawMessage(in)}, nil)
		if err != nil || res.Record.Status != RunFailed || !strings.Contains(res.Record.Error, want) {
			t.Fatalf("%s: %v %+v", in, err, res.Record)
		}
	}
	if r.count("upper") != 0 {
		t.Fatal("a tool ran")
	}
}

func TestEngine_AStepTimeoutEndsItsAttemptAndFailsTheStep(t *testing.T) {
	r := newRig(t, loop.ToolPolicy{})
	r.gate = make(chan struct{}) // never opened: upper waits for its deadline
	defer close(r.gate)
	w, err := Compile("t", Definition{Steps: []Step{{ID: "slow", Tool: "upper", Timeout: "50ms", Retry: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.engine.Run(context.Background(), w, RunInput{}, nil)
	if err != nil || res.Record.Status != RunFailed || res.Record.Steps["slow"].Attempts != 2 || r.count("upper") != 2 {
		t.Fatalf("%v %+v calls=%d", err, res.Record, r.count("upper"))
	}
}

func TestEngine_AnExpressionThatFailsAtRunTimeFailsItsStepWithTheReason(t *testing.T) {
	r := newRig(t, loop.ToolPolicy{})
	w, err := Compile("e", Definition{Steps: []Step{
		{ID: "collect", Tool: "split", Arguments: map[string]any{"text": "a b"}},
		{ID: "bad", Tool: "join", Arguments: map[string]any{"words": "${steps.collect.output.nope}"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.engine.Run(context.Background(), w, RunInput{}, nil)
	if err != nil || res.Record.Status != RunFailed || !strings.Contains(res.Record.Error, "step bad failed: arguments: ${steps.collect.output.nope}") || r.count("join") != 0 {
		t.Fatalf("%v %+v", err, res.Record)
	}
}

// Hostile templates compile or fail with an error; they never panic or hang.
func FuzzCompileTemplate(f *testing.F) {
	for _, s := range []string{"${", "${}", "$${x}", "${'}'}", `${"\"}"}`, "${ {'a': {'b': 1}}.a.b }", "a${inputs.x}b${steps.s.output}", "${item}", "}}${{", "${1/0}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tp, err := compileTemplate(s, true)
		if err != nil {
			return
		}
		_, _ = tp.eval(map[string]any{"inputs": map[string]any{}, "steps": map[string]any{}, "item": 1.0, "index": int64(0)})
	})
}

func TestEngine_ADecisionForAStepThatIsNoApprovalIsRefused(t *testing.T) {
	r := newRig(t, loop.ToolPolicy{})
	_, err := r.engine.Run(context.Background(), pipeline(t, 1), RunInput{Inputs: json.RawMessage(`{"text":"a"}`), Approvals: map[string]Decision{"collect": {Approved: true}}}, nil)
	if !errors.Is(err, ErrInputs) || !strings.Contains(err.Error(), `"collect" is not an approval step (approval steps: none)`) || r.count("split") != 0 {
		t.Fatalf("err = %v", err)
	}
}
