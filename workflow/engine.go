package workflow

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// Executor makes a run's outside calls. The host's takes every tool call through its
// one tool pipeline (host.Door.CallTool → loop.Agent.DirectCall: schema, guardrails,
// permissions, approvals, caps, the deadline; stored in session) and every prompt
// through its run path (a ReAct run stored in session).
type Executor interface {
	ToolStep(ctx context.Context, name string, args []byte, session string, timeout time.Duration) (loop.ToolResult, loop.RunResult)
	RunPrompt(ctx context.Context, agent, prompt, session string) (loop.RunResult, error)
}

// Engine runs compiled workflows.
type Engine struct {
	Store loop.SessionStore
	Exec  Executor
	// RetryDelay is the wait before a step's second attempt, doubled for each further
	// one (at most 30s); 0 is 500ms.
	RetryDelay time.Duration
}

// RunInput starts a run or, when RunID names a stored one, resumes it.
type RunInput struct {
	RunID  string          // "" generates one
	Owner  string          // the id of the user the run is for; "" the store's operator (owner.go)
	Inputs json.RawMessage // the inputs; on a resume, empty or the stored ones
	// Approvals decide waiting approval steps by step id.
	Approvals map[string]Decision
}

// Decision is a human's answer to an approval step; it becomes the step's output.
type Decision struct {
	Approved bool   `json:"approved"`
	Comment  string `json:"comment,omitempty"`
}

// Event types (docs/workflows.md#events).
const (
	EventWorkflowStarted  = "workflow_started"
	EventStepStarted      = "step_started"
	EventStepFinished     = "step_finished"
	EventStepWaiting      = "step_waiting"
	EventWorkflowFinished = "workflow_finished"
)

// Event is what a run reports as it goes.
type Event struct {
	Type     string         `json:"type"`
	Workflow string         `json:"workflow"`
	RunID    string         `json:"run_id"`
	Step     string         `json:"step,omitempty"`
	Kind     string         `json:"kind,omitempty"`    // tool | agent | approval
	Status   string         `json:"status,omitempty"`  // a step's or, at the end, the run's
	Items    int            `json:"items,omitempty"`   // a for_each step's item count
	Output   any            `json:"output,omitempty"`  // step_finished ok
	Error    string         `json:"error,omitempty"`   // a failed step or run
	Prompt   string         `json:"prompt,omitempty"`  // step_waiting: the question
	Resumed  bool           `json:"resumed,omitempty"` // workflow_started of a stored run
	Outputs  map[string]any `json:"outputs,omitempty"` // workflow_finished
	Sessions []string       `json:"sessions,omitempty"`
}

// Result is how a run ended.
type Result struct {
	Record  *Record
	Waiting []string // approval steps without a decision
}

// MaxItems bounds a for_each list: each item is a call and a stored session, and the
// list comes from inputs and tools' outputs.
const MaxItems = 10_000

// ErrInputs is wrapped by the error for inputs that do not match the schema.
var ErrInputs = errors.New("invalid workflow inputs")

// Run runs (or resumes) w. The error is for a run that could not start or whose state
// could not be stored; a step that failed is Record.Status "failed" with a nil error.
func (e *Engine) Run(ctx context.Context, w *Workflow, in RunInput, emit func(Event)) (Result, error) {
	if emit == nil {
		emit = func(Event) {}
	}
	if err := w.CheckApprovals(in.Approvals); err != nil {
		return Result{}, err
	}
	generated := in.RunID == ""
	if generated {
		in.RunID = newRunID()
	}
	if err := CheckRunID(in.RunID); err != nil {
		return Result{}, err
	}
	// One process runs a workflow run at a time: the lease of the run's own session
	// (never written to) keeps a second `workflow run --run-id` or HTTP resume out,
	// here or on another node, while the first lives. The session is the owner's
	// (RunSession), so another user's run of the same id holds another lease.
	ctx, cancel := context.WithCancelCause(withOwner(ctx, in.Owner))
	defer cancel(nil)
	// A new run's record is written with the lease where the store can (lease.go).
	key := recordKey(w.Name, in.Owner, in.RunID)
	var fresh *Record
	var first *loop.KVWrite
	if _, ok := e.Store.(leaseKVStore); ok {
		if fresh, _ = w.newRecord(in); fresh != nil {
			if b, err := headJSON(fresh, w.stepIDs(), rowsAt(key, fresh.Started)); err == nil {
				first = &loop.KVWrite{Namespace: KVNamespace, Key: key, Value: b}
			}
		}
	}
	// A new run's start rides on its first call (ridestart.go): read whether it is new,
	// unless its id was made here (a record under it is another run's, whose ridden start
	// is refused whole at the first call's commit, never resumed as this one).
	ride := false
	if first != nil && e.rides(w) {
		stored := false
		if !generated {
			var err error
			if stored, err = e.Store.(leaseTaker).KVHas(ctx, KVNamespace, key); err != nil {
				stored = true // unknown: not ridden
			}
		}
		ride = !stored
	}
	lease, created, err := e.holdRun(ctx, RunSession(w.Name, in.Owner, in.RunID), newRunID(), first, ride, cancel) // a new owner per call: two calls in one process are two holders
	if err != nil {
		return Result{}, fmt.Errorf("workflow %s run %s: %w", w.Name, in.RunID, err)
	}
	defer lease.done()
	var enc recWriter
	rec, resumed := fresh, false
	if created {
		enc.start(key, rowsAt(key, fresh.Started), first.Value, w.stepIDs(), nil, false)
		enc.head.keep(fresh, w.stepIDs(), enc.at, first.Value) // the head just stored: not encoded again
	} else if rec, resumed, err = e.open(ctx, w, in, key, &enc); err != nil {
		return Result{}, err
	}
	var held *heldEvents
	if created && lease.pending() { // a start riding on its first call: its events wait for it (ridestart.go)
		held = &heldEvents{emit: emit}
		emit = held.event
	}
	emit(Event{Type: EventWorkflowStarted, Workflow: w.Name, RunID: rec.RunID, Resumed: resumed})
	if rec.Status == RunCompleted { // nothing left to do: report what is stored

		emit(Event{Type: EventWorkflowFinished, Workflow: w.Name, RunID: rec.RunID, Status: rec.Status, Outputs: rec.Outputs, Error: rec.Error})
		return Result{Record: rec}, nil
	}
	s := &sched{e: e, w: w, rec: rec, in: in, emit: emit, sem: make(chan struct{}, w.maxPar), done: make(chan stepDone), lease: lease, enc: enc, cancel: cancel, held: held}
	res, err := s.run(ctx)
	if s.startErr != nil { // the run's start was refused: nothing of it is stored (ridestart.go)
		return Result{}, s.startErr
	}
	return res, err
}

// open reads the run's record under key or stores a new one, and starts enc from what
// is stored.
func (e *Engine) open(ctx context.Context, w *Workflow, in RunInput, key string, enc *recWriter) (*Record, bool, error) {
	rec, h, ok, err := loadStored(ctx, e.Store, w.Name, in.RunID, key, false)
	if err != nil {
		return nil, false, err
	}
	if ok {
		if len(in.Inputs) > 0 && !sameJSON(in.Inputs, rec.Inputs) {
			return nil, false, fmt.Errorf("workflow %s run %s: %w: a resumed run keeps the inputs it started with", w.Name, in.RunID, ErrInputs)
		}
		if h.RowsAt == "" { // a record stored whole: its steps go to rows at its next write
			enc.start(key, rowsAt(key, rec.Started), nil, nil, rec.Steps, true)
		} else {
			enc.start(key, h.RowsAt, nil, h.StepRows, rec.Steps, false)
		}
		// After enc.start: a step's end read from its call (notes.go) is no stored row,
		// so the run's next write stores it.
		if err := fromCalls(ctx, e.Store, rec, h, in.Owner, false); err != nil {
			return nil, false, err
		}
		return rec, true, nil
	}
	if rec, err = w.newRecord(in); err != nil {
		return nil, false, err
	}
	at := rowsAt(key, rec.Started)
	b, err := headJSON(rec, w.stepIDs(), at)
	if err == nil {
		err = setAll(ctx, e.Store, []loop.KVWrite{{Namespace: KVNamespace, Key: key, Value: b}})
	}
	if err != nil {
		return nil, false, fmt.Errorf("workflow %s run %s: store record: %w", w.Name, in.RunID, err)
	}
	enc.start(key, at, b, w.stepIDs(), nil, false)
	enc.head.keep(rec, w.stepIDs(), at, b)
	return rec, false, nil
}

// newRecord is the record of a new run of w with in's inputs (empty is {}), checked.
func (w *Workflow) newRecord(in RunInput) (*Record, error) {
	inputs := in.Inputs
	if len(inputs) == 0 {
		inputs = json.RawMessage("{}")
	}
	if err := w.CheckInputs(inputs); err != nil {
		return nil, err
	}
	return &Record{Workflow: w.Name, RunID: in.RunID, Owner: in.Owner, Inputs: inputs, Status: RunRunning,
		Started: time.Now().UTC(), Steps: map[string]*StepRecord{}}, nil
}

// CheckApprovals refuses decisions for steps that are not approval steps (an error
// wrapping ErrInputs).
func (w *Workflow) CheckApprovals(decisions map[string]Decision) error {
	for id := range decisions {
		if cs, ok := w.byID[id]; !ok || cs.Approval == "" {
			return fmt.Errorf("workflow %s: %w: %q is not an approval step (approval steps: %s)", w.Name, ErrInputs, id, strings.Join(w.approvalSteps(), ", "))
		}
	}
	return nil
}

// CheckInputs checks a new run's inputs (empty is {}): JSON, and the inputs schema when
// there is one. The error wraps ErrInputs.
func (w *Workflow) CheckInputs(inputs json.RawMessage) error {
	if len(inputs) == 0 {
		inputs = json.RawMessage("{}")
	}
	var probe any
	if err := json.Unmarshal(inputs, &probe); err != nil {
		return fmt.Errorf("workflow %s: %w: not JSON: %v", w.Name, ErrInputs, err)
	}
	if w.inputs != nil {
		if err := w.inputs.Validate(inputs); err != nil {
			return fmt.Errorf("workflow %s: %w: %v", w.Name, ErrInputs, err)
		}
	}
	return nil
}

func (w *Workflow) approvalSteps() []string {
	var out []string
	for _, cs := range w.steps {
		if cs.Approval != "" {
			out = append(out, cs.ID)
		}
	}
	if out == nil {
		return []string{"none"}
	}
	return out
}

func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

func newRunID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "wf-" + hex.EncodeToString(b)
}
