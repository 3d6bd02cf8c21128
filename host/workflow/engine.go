package workflow

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// Executor makes a run's outside calls. The host's takes every tool call through its
// one tool pipeline (host.Host.Call → loop.Agent.CallTool: schema, guardrails,
// permissions, approvals, caps, the deadline; stored in session) and every prompt
// through its run path (a ReAct run stored in session).
type Executor interface {
	CallTool(ctx context.Context, name string, args []byte, session string, timeout time.Duration) (loop.ToolResult, loop.RunResult)
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
	if in.RunID == "" {
		in.RunID = newRunID()
	}
	// One process runs a workflow run at a time: the lease of the run's own session
	// (never written to) keeps a second `workflow run --run-id` or HTTP resume out,
	// here or on another node, while the first lives.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	release, err := loop.HoldSession(ctx, e.Store, "workflow:"+w.Name+":"+in.RunID, newRunID(), cancel) // a new owner per call: two calls in one process are two holders
	if err != nil {
		return Result{}, fmt.Errorf("workflow %s run %s: %w", w.Name, in.RunID, err)
	}
	defer release()
	rec, resumed, err := e.open(ctx, w, in)
	if err != nil {
		return Result{}, err
	}
	emit(Event{Type: EventWorkflowStarted, Workflow: w.Name, RunID: rec.RunID, Resumed: resumed})
	if rec.Status == RunCompleted { // nothing left to do: report what is stored

		emit(Event{Type: EventWorkflowFinished, Workflow: w.Name, RunID: rec.RunID, Status: rec.Status, Outputs: rec.Outputs, Error: rec.Error})
		return Result{Record: rec}, nil
	}
	s := &sched{e: e, w: w, rec: rec, in: in, emit: emit, sem: make(chan struct{}, w.maxPar), done: make(chan stepDone)}
	return s.run(ctx)
}

func (e *Engine) open(ctx context.Context, w *Workflow, in RunInput) (*Record, bool, error) {
	rec, ok, err := LoadRecord(ctx, e.Store, w.Name, in.RunID)
	if err != nil {
		return nil, false, err
	}
	if ok {
		if len(in.Inputs) > 0 && !sameJSON(in.Inputs, rec.Inputs) {
			return nil, false, fmt.Errorf("workflow %s run %s: %w: a resumed run keeps the inputs it started with", w.Name, in.RunID, ErrInputs)
		}
		return rec, true, nil
	}
	inputs := in.Inputs
	if len(inputs) == 0 {
		inputs = json.RawMessage("{}")
	}
	var probe any
	if err := json.Unmarshal(inputs, &probe); err != nil {
		return nil, false, fmt.Errorf("workflow %s: %w: not JSON: %v", w.Name, ErrInputs, err)
	}
	if w.inputs != nil {
		if err := w.inputs.Validate(inputs); err != nil {
			return nil, false, fmt.Errorf("workflow %s: %w: %v", w.Name, ErrInputs, err)
		}
	}
	rec = &Record{Workflow: w.Name, RunID: in.RunID, Inputs: inputs, Status: RunRunning,
		Started: time.Now().UTC(), Steps: map[string]*StepRecord{}}
	return rec, false, saveRecord(ctx, e.Store, rec)
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

// sched is one run of the scheduler: it alone emits, and it decides what starts; step
// goroutines report back on done. mu guards rec, which items update as they end.
type sched struct {
	e    *Engine
	w    *Workflow
	in   RunInput
	emit func(Event)
	sem  chan struct{}
	done chan stepDone

	mu      sync.Mutex
	rec     *Record
	running map[string]bool
	failed  []string        // steps that failed in this run: nothing new starts after one
	waiting map[string]bool // approval steps left waiting in this run
}

type stepDone struct {
	id     string
	output any
	err    error
}

func (s *sched) run(ctx context.Context) (Result, error) {
	s.running, s.waiting = map[string]bool{}, map[string]bool{}
	s.rec.Status, s.rec.Error, s.rec.Ended = RunRunning, "", time.Time{}
	var storeErr error
	for {
		if len(s.failed) == 0 && ctx.Err() == nil && storeErr == nil {
			storeErr = s.startReady(ctx)
		}
		if len(s.running) == 0 {
			break
		}
		d := <-s.done
		delete(s.running, d.id)
		if err := s.finish(ctx, d); err != nil {
			storeErr = err
		}
		if d.err != nil && ctx.Err() == nil {
			s.failed = append(s.failed, d.id)
		}
	}
	var waiting []string
	for _, cs := range s.w.steps {
		if r := s.rec.Steps[cs.ID]; r != nil && r.Status == StatusWaiting {
			waiting = append(waiting, cs.ID)
		}
	}
	switch {
	case storeErr != nil:
		s.rec.Status, s.rec.Error = RunFailed, storeErr.Error()
	case ctx.Err() != nil:
		s.rec.Status, s.rec.Error = RunAborted, ctx.Err().Error()
	case len(s.failed) > 0:
		s.rec.Status, s.rec.Error = RunFailed, fmt.Sprintf("step %s failed: %s", s.failed[0], s.rec.Steps[s.failed[0]].Error)
	case len(waiting) > 0:
		s.rec.Status = RunInterrupted
	default:
		s.rec.Status = RunCompleted
		s.rec.Outputs = s.outputs()
	}
	s.rec.Ended = time.Now().UTC()
	err := saveRecord(ctx, s.e.Store, s.rec)
	s.emit(Event{Type: EventWorkflowFinished, Workflow: s.w.Name, RunID: s.rec.RunID, Status: s.rec.Status, Outputs: s.rec.Outputs, Error: s.rec.Error})
	if storeErr != nil {
		err = storeErr
	}
	return Result{Record: s.rec, Waiting: waiting}, err
}

// outputs are the named steps' outputs, or, when no step names one, the outputs of the
// steps nothing depends on, by step id.
func (s *sched) outputs() map[string]any {
	out := map[string]any{}
	for _, cs := range s.w.steps {
		r := s.rec.Steps[cs.ID]
		switch {
		case s.w.outputs && cs.Output != "":
			out[cs.Output] = r.Output
		case !s.w.outputs && cs.sink:
			out[cs.ID] = r.Output
		}
	}
	return out
}

// terminal says a step has ended for good in this run.
func terminal(r *StepRecord) bool {
	return r != nil && (r.Status == StatusOK || r.Status == StatusSkipped || r.Status == StatusRejected)
}

// startReady starts (or settles at once: skipped, approvals) every step whose
// dependencies ended, until nothing more can be decided without waiting.
func (s *sched) startReady(ctx context.Context) error {
	for progress := true; progress; {
		progress = false
		for _, cs := range s.w.steps {
			r := s.rec.Steps[cs.ID]
			if len(s.failed) > 0 {
				return nil
			}
			if s.running[cs.ID] || terminal(r) || s.waiting[cs.ID] {
				continue
			}
			ready, skipBy := true, ""
			for _, d := range cs.deps {
				dr := s.rec.Steps[d]
				if !terminal(dr) {
					ready = false
					break
				}
				if dr.Status != StatusOK && skipBy == "" {
					skipBy = d
				}
			}
			if !ready {
				continue
			}
			progress = true
			vars := s.vars()
			if skipBy != "" {
				if err := s.settle(ctx, cs, StatusSkipped, nil, "dependency "+skipBy+" was "+s.rec.Steps[skipBy].Status); err != nil {
					return err
				}
				continue
			}
			if cs.cond != nil {
				v, err := eval(cs.cond, vars)
				if err == nil {
					if b, ok := v.(bool); !ok {
						err = errNotBool
					} else if !b {
						if err := s.settle(ctx, cs, StatusSkipped, nil, "if is false: "+cs.If); err != nil {
							return err
						}
						continue
					}
				}
				if err != nil {
					return s.settle(ctx, cs, StatusFailed, nil, fmt.Sprintf("if %q: %v", cs.If, err))
				}
			}
			if cs.Approval != "" {
				if err := s.approval(ctx, cs, vars); err != nil {
					return err
				}
				continue
			}
			if err := s.start(ctx, cs, vars); err != nil {
				return err
			}
		}
	}
	return nil
}

// vars is the expressions' activation: the inputs and the ended steps.
func (s *sched) vars() map[string]any {
	var inputs any
	_ = json.Unmarshal(s.rec.Inputs, &inputs)
	steps := map[string]any{}
	for id, r := range s.rec.Steps {
		if terminal(r) {
			steps[id] = map[string]any{"output": r.Output, "status": r.Status}
		}
	}
	return map[string]any{"inputs": inputs, "steps": steps}
}

// settle ends a step without running it (skipped, failed before a call, decided).
func (s *sched) settle(ctx context.Context, cs *cstep, status string, output any, msg string) error {
	now := time.Now().UTC()
	r := &StepRecord{Status: status, Started: now, Ended: now, Output: output, Error: msg}
	s.mu.Lock()
	s.rec.Steps[cs.ID] = r
	err := saveRecord(ctx, s.e.Store, s.rec)
	s.mu.Unlock()
	ev := Event{Type: EventStepFinished, Workflow: s.w.Name, RunID: s.rec.RunID, Step: cs.ID, Kind: cs.Kind(), Status: status, Output: output}
	if status != StatusOK {
		ev.Error = msg
	}
	s.emit(ev)
	if status == StatusFailed {
		s.failed = append(s.failed, cs.ID)
	}
	return err
}

// approval decides an approval step from RunInput.Approvals, or leaves it waiting.
func (s *sched) approval(ctx context.Context, cs *cstep, vars map[string]any) error {
	q, err := cs.prompt.eval(vars)
	if err != nil {
		return s.settle(ctx, cs, StatusFailed, nil, err.Error())
	}
	question := fmt.Sprint(q)
	d, ok := s.in.Approvals[cs.ID]
	if !ok {
		s.waiting[cs.ID] = true
		if r := s.rec.Steps[cs.ID]; r != nil && r.Status == StatusWaiting {
			s.emit(Event{Type: EventStepWaiting, Workflow: s.w.Name, RunID: s.rec.RunID, Step: cs.ID, Kind: "approval", Prompt: question})
			return nil
		}
		s.mu.Lock()
		s.rec.Steps[cs.ID] = &StepRecord{Status: StatusWaiting, Started: time.Now().UTC(), Output: map[string]any{"prompt": question}}
		err := saveRecord(ctx, s.e.Store, s.rec)
		s.mu.Unlock()
		s.emit(Event{Type: EventStepStarted, Workflow: s.w.Name, RunID: s.rec.RunID, Step: cs.ID, Kind: "approval"})
		s.emit(Event{Type: EventStepWaiting, Workflow: s.w.Name, RunID: s.rec.RunID, Step: cs.ID, Kind: "approval", Prompt: question})
		return err
	}
	out := map[string]any{"approved": d.Approved, "comment": d.Comment}
	if d.Approved {
		return s.settle(ctx, cs, StatusOK, out, "")
	}
	return s.settle(ctx, cs, StatusRejected, out, "rejected: "+d.Comment)
}

// start records the step as running and runs it in its own goroutine.
func (s *sched) start(ctx context.Context, cs *cstep, vars map[string]any) error {
	var items []any
	if cs.forEach != nil {
		v, err := eval(cs.forEach, vars)
		if err == nil {
			var ok bool
			if items, ok = v.([]any); !ok {
				err = fmt.Errorf("for_each is not a list (got %T)", v)
			} else if len(items) > MaxItems {
				err = fmt.Errorf("for_each gave %d items, more than %d", len(items), MaxItems)
			}
		}
		if err != nil {
			return s.settle(ctx, cs, StatusFailed, nil, fmt.Sprintf("for_each %q: %v", cs.ForEach, err))
		}
	}
	s.mu.Lock()
	prev := s.rec.Steps[cs.ID]
	r := &StepRecord{Status: StatusRunning, Started: time.Now().UTC()}
	if prev != nil && cs.forEach != nil && len(prev.Items) == len(items) {
		r.Items = prev.Items // a resumed fan-out keeps the items that ended
	} else if cs.forEach != nil {
		r.Items = make([]*ItemRecord, len(items))
	}
	s.rec.Steps[cs.ID] = r
	err := saveRecord(ctx, s.e.Store, s.rec)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	s.running[cs.ID] = true
	s.emit(Event{Type: EventStepStarted, Workflow: s.w.Name, RunID: s.rec.RunID, Step: cs.ID, Kind: cs.Kind(), Items: len(items)})
	go func() {
		out, err := s.exec(ctx, cs, vars, items)
		s.done <- stepDone{id: cs.ID, output: out, err: err}
	}()
	return nil
}

// finish stores a step's end and reports it.
func (s *sched) finish(ctx context.Context, d stepDone) error {
	cs := s.w.byID[d.id]
	s.mu.Lock()
	r := s.rec.Steps[d.id]
	r.Ended = time.Now().UTC()
	switch {
	case d.err != nil && ctx.Err() != nil:
		r.Ended = time.Time{} // cut short, not ended: a resume runs it again
	case d.err != nil:
		r.Status, r.Error = StatusFailed, d.err.Error()
	default:
		r.Status, r.Output = StatusOK, d.output
	}
	err := saveRecord(ctx, s.e.Store, s.rec)
	s.mu.Unlock()
	ev := Event{Type: EventStepFinished, Workflow: s.w.Name, RunID: s.rec.RunID, Step: d.id, Kind: cs.Kind(), Status: r.Status, Output: r.Output, Error: r.Error}
	if r.Status == StatusRunning {
		ev.Status, ev.Error = RunAborted, d.err.Error()
	}
	s.emit(ev)
	return err
}

// exec runs a step: once, or once per item with at most max_parallel at a time across
// the run; items that ended in an earlier attempt of the run are not run again.
func (s *sched) exec(ctx context.Context, cs *cstep, vars map[string]any, items []any) (any, error) {
	if cs.forEach == nil {
		return s.attempts(ctx, cs, vars, s.rec.RunID+"."+cs.ID)
	}
	outs := make([]any, len(items))
	errs := make([]error, len(items))
	var wg sync.WaitGroup
	for i, item := range items {
		s.mu.Lock()
		ir := s.rec.Steps[cs.ID].Items[i]
		s.mu.Unlock()
		if ir != nil && ir.Status == StatusOK {
			outs[i] = ir.Output
			continue
		}
		iv := map[string]any{"inputs": vars["inputs"], "steps": vars["steps"], "item": item, "index": int64(i)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := s.attempts(ctx, cs, iv, fmt.Sprintf("%s.%s.%d", s.rec.RunID, cs.ID, i))
			ir := &ItemRecord{Status: StatusOK, Output: out}
			if err != nil {
				ir = &ItemRecord{Status: StatusFailed, Error: err.Error()}
			}
			outs[i], errs[i] = out, err
			if err != nil && ctx.Err() != nil {
				return // cut short: no record, the item runs again on resume
			}
			s.mu.Lock()
			s.rec.Steps[cs.ID].Items[i] = ir
			serr := saveRecord(ctx, s.e.Store, s.rec)
			s.mu.Unlock()
			if serr != nil && errs[i] == nil {
				errs[i] = serr
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
	}
	return outs, nil
}

// attempts runs one unit (the step, or one item) with the step's retries; each attempt
// holds a slot of max_parallel.
func (s *sched) attempts(ctx context.Context, cs *cstep, vars map[string]any, session string) (any, error) {
	delay := s.e.RetryDelay
	if delay <= 0 {
		delay = 500 * time.Millisecond
	}
	var last error
	for attempt := 0; attempt <= cs.Retry; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
			delay = min(2*delay, 30*time.Second)
		}
		select {
		case s.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		s.mu.Lock()
		s.rec.Steps[cs.ID].Attempts++
		s.mu.Unlock()
		out, err := s.once(ctx, cs, vars, session)
		<-s.sem
		if err == nil {
			return out, nil
		}
		last = err
		if ctx.Err() != nil {
			return nil, err
		}
	}
	return nil, last
}

// once makes one attempt: one tool call or one prompt run, under the step's timeout.
func (s *sched) once(ctx context.Context, cs *cstep, vars map[string]any, session string) (any, error) {
	if cs.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cs.timeout)
		defer cancel()
	}
	if cs.Tool != "" {
		args, err := evalValue(cs.args, vars)
		if err != nil {
			return nil, fmt.Errorf("arguments: %w", err)
		}
		if args == nil {
			args = map[string]any{}
		}
		b, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("arguments: %w", err)
		}
		res, run := s.e.Exec.CallTool(ctx, cs.Tool, b, session, cs.timeout)
		if run.Status != loop.StatusCompleted || res.IsError {
			return nil, errors.New(res.Text())
		}
		return resultValue(res.Structured, res.Text()), nil
	}
	p, err := cs.prompt.eval(vars)
	if err != nil {
		return nil, fmt.Errorf("prompt: %w", err)
	}
	prompt, ok := p.(string)
	if !ok {
		b, _ := json.Marshal(p)
		prompt = string(b)
	}
	res, err := s.e.Exec.RunPrompt(ctx, cs.Agent, prompt, session)
	if err != nil {
		return nil, err
	}
	if res.Status != loop.StatusCompleted {
		msg := fmt.Sprintf("the agent run ended %s/%s", res.Status, res.Reason)
		if res.Err != nil {
			msg += ": " + res.Err.Error()
		}
		return nil, errors.New(msg)
	}
	text := ""
	if res.Final != nil {
		text = res.Final.Text()
	}
	return resultValue(res.Output, text), nil
}

// resultValue is a step's output: the structured result when there is one, else the
// text, parsed when it is a JSON document (a tool that prints a list gives a list).
func resultValue(structured json.RawMessage, text string) any {
	var v any
	if len(structured) > 0 && json.Unmarshal(structured, &v) == nil {
		return v
	}
	if json.Valid([]byte(text)) && json.Unmarshal([]byte(text), &v) == nil {
		return v
	}
	return text
}
