package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// StateStore keeps runs' state (loop.SessionStore's key/value half).
type StateStore interface {
	KVGet(ctx context.Context, plugin, key string) ([]byte, bool, error)
	KVSet(ctx context.Context, plugin, key string, value []byte) error
}

// StateNamespace is the key/value namespace of workflow state; plugins cannot be named
// like it (the manifest refuses names starting "agenthost:").
const StateNamespace = "agenthost:workflow"

// Options are what a run calls. Call, Prompt and State are required; Approve is needed
// by approval steps.
type Options struct {
	// Call takes a tool call through the host's tool pipeline, stored in session.
	Call func(ctx context.Context, tool string, args []byte, session string) (loop.ToolResult, error)
	// Prompt runs the agent on prompt in session and returns its final text.
	Prompt func(ctx context.Context, prompt, session string) (string, error)
	// Approve asks a person; call names the step (ID: the step key, Arguments: the text).
	Approve func(ctx context.Context, call loop.ToolCall) (loop.Approval, error)
	State   StateStore
	// Parallel bounds the steps (and for_each items) running at once; default 4.
	Parallel int
	// Emit, when set, gets the run's events in order.
	Emit func(Event)
}

// Event is what a run reports: workflow_started, step_started, step_finished (Status
// done, failed or skipped; Output or Error), workflow_finished (Status, Output).
type Event struct {
	Type   string `json:"type"`
	Run    string `json:"run"`
	Step   string `json:"step,omitempty"`
	Item   *int   `json:"item,omitempty"`
	Status string `json:"status,omitempty"`
	Output any    `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
	// Resumed: the step had ended in an earlier attempt of the run; nothing ran again.
	Resumed bool `json:"resumed,omitempty"`
}

// Step statuses.
const (
	StatusRunning = "running"
	StatusDone    = "done"
	StatusFailed  = "failed"
	StatusSkipped = "skipped"
)

// Record is a step's (or a for_each item's) stored state.
type Record struct {
	Status   string    `json:"status"`
	Output   any       `json:"output,omitempty"`
	Error    string    `json:"error,omitempty"`
	Attempts int       `json:"attempts"`
	Started  time.Time `json:"started"`
	Ended    time.Time `json:"ended,omitzero"`
}

// State is a run's stored state.
type State struct {
	Workflow string            `json:"workflow"`
	Inputs   map[string]any    `json:"inputs"`
	Steps    map[string]Record `json:"steps"` // by step id, and ID#i for items
	Status   string            `json:"status"`
	Output   any               `json:"output,omitempty"`
}

// Result is a finished run.
type Result struct {
	Run    string `json:"run"`
	Status string `json:"status"` // done | failed
	Output any    `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
}

// ErrInputsDiffer is what resuming a run with other inputs gets.
var ErrInputsDiffer = errors.New("the run was started with other inputs")

type runner struct {
	w     *Workflow
	id    string
	opts  Options
	mu    sync.Mutex // guards st and emits
	st    State
	sem   chan struct{}
	fails []string
}

// Run runs (or resumes: the same runID) the workflow with inputs (nil on resume: the
// stored ones). It returns an error only when the state cannot be read or written or
// ctx ends; a failed step is a Result with Status failed.
func Run(ctx context.Context, w *Workflow, runID string, inputs map[string]any, opts Options) (Result, error) {
	r := &runner{w: w, id: runID, opts: opts, sem: make(chan struct{}, max(opts.Parallel, 1))}
	if opts.Parallel == 0 {
		r.sem = make(chan struct{}, 4)
	}
	if err := r.load(ctx, inputs); err != nil {
		return Result{}, err
	}
	if r.st.Status == StatusDone || r.st.Status == StatusFailed {
		return Result{Run: runID, Status: r.st.Status, Output: r.st.Output}, nil
	}
	r.emit(Event{Type: "workflow_started", Run: runID})
	if err := r.runSteps(ctx); err != nil {
		return Result{}, err
	}
	res := Result{Run: runID, Status: StatusDone}
	if len(r.fails) > 0 {
		sort.Strings(r.fails)
		res.Status, res.Error = StatusFailed, r.fails[0]
	} else {
		out, err := r.output()
		if err != nil {
			res.Status, res.Error = StatusFailed, "output: "+err.Error()
		}
		res.Output = out
	}
	r.mu.Lock()
	r.st.Status, r.st.Output = res.Status, res.Output
	err := r.save(ctx)
	r.mu.Unlock()
	if err != nil {
		return Result{}, err
	}
	r.emit(Event{Type: "workflow_finished", Run: runID, Status: res.Status, Output: res.Output, Error: res.Error})
	return res, nil
}

func (r *runner) load(ctx context.Context, inputs map[string]any) error {
	b, ok, err := r.opts.State.KVGet(ctx, StateNamespace, r.id)
	if err != nil {
		return fmt.Errorf("workflow run %s: %w", r.id, err)
	}
	if ok {
		if err := json.Unmarshal(b, &r.st); err != nil {
			return fmt.Errorf("workflow run %s: stored state: %w", r.id, err)
		}
		if r.st.Workflow != r.w.Name {
			return fmt.Errorf("workflow run %s is a run of %q, not %q", r.id, r.st.Workflow, r.w.Name)
		}
		if inputs != nil && !sameJSON(inputs, r.st.Inputs) {
			return fmt.Errorf("workflow run %s: %w", r.id, ErrInputsDiffer)
		}
		return nil
	}
	if inputs == nil {
		inputs = map[string]any{}
	}
	if r.w.inputs != nil {
		b, _ := json.Marshal(inputs)
		if err := loop.ValidateAgainst(r.w.inputs, string(b)); err != nil {
			return fmt.Errorf("workflow %s: inputs: %w", r.w.Name, err)
		}
	}
	r.st = State{Workflow: r.w.Name, Inputs: inputs, Steps: map[string]Record{}, Status: StatusRunning}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.save(ctx)
}

// save stores the state; r.mu is held.
func (r *runner) save(ctx context.Context) error {
	b, err := json.Marshal(r.st)
	if err != nil {
		return err
	}
	if err := r.opts.State.KVSet(context.WithoutCancel(ctx), StateNamespace, r.id, b); err != nil {
		return fmt.Errorf("workflow run %s: store: %w", r.id, err)
	}
	return nil
}

func (r *runner) emit(e Event) {
	if r.opts.Emit != nil {
		r.opts.Emit(e)
	}
}

func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// vars is what expressions see: inputs and the ended steps.
func (r *runner) vars() map[string]any {
	steps := map[string]any{}
	for _, s := range r.w.steps {
		if rec, ok := r.st.Steps[s.ID]; ok && rec.Status != StatusRunning {
			steps[s.ID] = map[string]any{"output": rec.Output, "status": rec.Status}
		}
	}
	return map[string]any{"inputs": r.st.Inputs, "steps": steps, "item": nil, "index": 0}
}

func (r *runner) output() (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w.output != nil {
		return evalNative(r.w.output, r.vars())
	}
	out := map[string]any{}
	for _, s := range r.w.steps {
		if rec := r.st.Steps[s.ID]; rec.Status == StatusDone {
			out[s.ID] = rec.Output
		}
	}
	return out, nil
}
