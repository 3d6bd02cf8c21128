package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

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
	failed  []string               // steps that failed in this run: nothing new starts after one
	waiting map[string]bool        // approval steps left waiting in this run
	over    map[string]*StepRecord // ends stored by their calls, not yet adopted by finish (fold.go)
	ready   []func() stepDone      // steps started by startReady, not yet running (launch)

	inputs   any       // s.rec.Inputs decoded (vars), once inputsOK
	inputsOK bool      // read by the scheduler's goroutine only
	enc      recWriter // what the run's writes stored (rows.go)
	lease    *runLease // the run's lease, given back with the final record (lease.go)

	ctx     context.Context // the run's
	alone   bool            // a step runs on the scheduler's goroutine, the only one running (s.mu)
	stopErr error           // a write of the run failed: nothing new starts (run's storeErr)
	final   bool            // the final record is stored, with the last step's call (final.go)

	cancel   context.CancelCauseFunc // the run's context's
	startErr error                   // the run's start, ridden or flushed, failed: nothing is stored (ridestart.go; s.mu)
	held     *heldEvents             // a ridden start's events, until it is stored (ridestart.go)
}

type stepDone struct {
	id     string
	output any
	err    error
}

func (s *sched) run(ctx context.Context) (Result, error) {
	s.running, s.waiting, s.ctx = map[string]bool{}, map[string]bool{}, ctx
	s.rec.Status, s.rec.Error, s.rec.Ended = RunRunning, "", time.Time{}
	var storeErr error
	for {
		if len(s.failed) == 0 && ctx.Err() == nil && storeErr == nil {
			storeErr = s.startReady(ctx)
		}
		if len(s.running) == 0 {
			break
		}
		s.stopErr = storeErr
		d := s.launch()
		delete(s.running, d.id)
		if err := s.finish(ctx, d); err != nil {
			storeErr = err
		}
		switch {
		case d.err == nil || ctx.Err() != nil:
		case storeOutage(d.err): // cut short by the store, not failed: the run's retry runs it again
			if storeErr == nil {
				storeErr = d.err
			}
		default:
			s.failed = append(s.failed, d.id)
		}
	}
	if s.final { // stored with the last step's call's end (final.go)
		s.emit(Event{Type: EventWorkflowFinished, Workflow: s.w.Name, RunID: s.rec.RunID, Status: s.rec.Status, Outputs: s.rec.Outputs})
		return Result{Record: s.rec}, nil
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
		s.rec.Outputs = s.outputsOf(s.rec.Steps)
	}
	s.rec.Ended = time.Now().UTC()
	err := s.saveLast(ctx)
	s.emit(Event{Type: EventWorkflowFinished, Workflow: s.w.Name, RunID: s.rec.RunID, Status: s.rec.Status, Outputs: s.rec.Outputs, Error: s.rec.Error})
	if storeErr != nil {
		err = storeErr
	}
	return Result{Record: s.rec, Waiting: waiting}, err
}

// outputsOf are the named steps' outputs, or, when no step names one, the outputs of the
// steps nothing depends on, by step id, from steps (the record's).
func (s *sched) outputsOf(steps map[string]*StepRecord) map[string]any {
	out := map[string]any{}
	for _, cs := range s.w.steps {
		r := steps[cs.ID]
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
			if len(s.failed) > 0 {
				return nil
			}
			if s.running[cs.ID] || terminal(s.rec.Steps[cs.ID]) || s.waiting[cs.ID] {
				continue
			}
			ready, skipBy := s.readiness(cs)
			if !ready {
				continue
			}
			progress = true
			if err := s.decide(ctx, cs, skipBy); err != nil {
				return err
			}
		}
	}
	return nil
}

// readiness says whether every dependency of cs ended, and names the first that ended
// other than ok (which skips cs).
func (s *sched) readiness(cs *cstep) (ready bool, skipBy string) {
	for _, d := range cs.deps {
		dr := s.rec.Steps[d]
		if !terminal(dr) {
			return false, ""
		}
		if dr.Status != StatusOK && skipBy == "" {
			skipBy = d
		}
	}
	return true, skipBy
}

// decide settles or starts a ready step: skipped (a dependency or its if), failed (its
// if does not evaluate), an approval, or started.
func (s *sched) decide(ctx context.Context, cs *cstep, skipBy string) error {
	var vars map[string]any
	if usesVars(cs) {
		vars = s.vars()
	}
	if skipBy != "" {
		return s.settle(ctx, cs, StatusSkipped, nil, "dependency "+skipBy+" was "+s.rec.Steps[skipBy].Status)
	}
	if cs.cond != nil {
		v, err := eval(cs.cond, vars)
		b, isBool := v.(bool)
		switch {
		case err == nil && !isBool:
			err = errNotBool
		case err == nil && !b:
			return s.settle(ctx, cs, StatusSkipped, nil, "if is false: "+cs.If)
		}
		if err != nil {
			return s.settle(ctx, cs, StatusFailed, nil, fmt.Sprintf("if %q: %v", cs.If, err))
		}
	}
	if cs.Approval != "" {
		return s.approval(ctx, cs, vars)
	}
	return s.start(ctx, cs, vars)
}

// usesVars says whether anything of cs is evaluated (its if, for_each, arguments,
// prompt or sub-workflow): a tool step with fixed arguments needs no activation.
func usesVars(cs *cstep) bool {
	return cs.cond != nil || cs.forEach != nil || cs.Tool == "" || cs.Workflow != "" || cs.Approval != "" || hasTemplate(cs.args)
}

// vars is the expressions' activation: the inputs and the ended steps. The inputs are
// decoded once a run; nothing changes a decoded value (expressions and arguments read it).
func (s *sched) vars() map[string]any {
	if !s.inputsOK {
		_ = json.Unmarshal(s.rec.Inputs, &s.inputs)
		s.inputsOK = true
	}
	inputs := s.inputs
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
	err := s.save(ctx)
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
		err := s.save(ctx)
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
	var err error
	if cs.Tool == "" || cs.forEach != nil {
		err = s.save(ctx) // a tool step's start is stored with its call's first write (fold.go)
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	s.running[cs.ID] = true
	s.emit(Event{Type: EventStepStarted, Workflow: s.w.Name, RunID: s.rec.RunID, Step: cs.ID, Kind: cs.Kind(), Items: len(items)})
	s.ready = append(s.ready, func() stepDone {
		out, err := s.exec(ctx, cs, vars, items)
		return stepDone{id: cs.ID, output: out, err: err}
	})
	return nil
}

// launch runs the steps start made ready and returns the next that ends. A step that is
// the only one running (a chain's next step) runs on the scheduler's goroutine: nothing
// else can end while it runs, so there is nothing to wait for but it, and a goroutine of
// its own would cost its creation, its stack's growth and a wake-up a step. Otherwise
// each runs in a goroutine of its own and reports on s.done.
func (s *sched) launch() stepDone {
	if len(s.ready) == 1 && len(s.running) == 1 {
		f := s.ready[0]
		s.ready = s.ready[:0]
		s.mu.Lock()
		s.alone = true
		s.mu.Unlock()
		d := f()
		s.mu.Lock()
		s.alone = false
		s.mu.Unlock()
		return d
	}
	for _, f := range s.ready {
		go func() { s.done <- f() }()
	}
	clear(s.ready)
	s.ready = s.ready[:0]
	return <-s.done
}

// finish stores a step's end and reports it.
func (s *sched) finish(ctx context.Context, d stepDone) error {
	cs := s.w.byID[d.id]
	s.mu.Lock()
	if d.err == nil && s.adopt(d.id) { // stored with the call's end (fold.go)
		r := s.rec.Steps[d.id]
		s.mu.Unlock()
		s.emit(Event{Type: EventStepFinished, Workflow: s.w.Name, RunID: s.rec.RunID, Step: d.id, Kind: cs.Kind(), Status: r.Status, Output: r.Output})
		return nil
	}
	delete(s.over, d.id)
	r := s.rec.Steps[d.id]
	r.Ended = time.Now().UTC()
	switch {
	case d.err != nil && (ctx.Err() != nil || storeOutage(d.err)):
		r.Ended = time.Time{} // cut short, not ended: a resume runs it again
	case d.err != nil:
		r.Status, r.Error = StatusFailed, d.err.Error()
	default:
		r.Status, r.Output = StatusOK, d.output
	}
	err := s.save(ctx)
	s.mu.Unlock()
	ev := Event{Type: EventStepFinished, Workflow: s.w.Name, RunID: s.rec.RunID, Step: d.id, Kind: cs.Kind(), Status: r.Status, Output: r.Output, Error: r.Error}
	if r.Status == StatusRunning {
		ev.Status, ev.Error = RunAborted, d.err.Error()
	}
	s.emit(ev)
	return err
}
