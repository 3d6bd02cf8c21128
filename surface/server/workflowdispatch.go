package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/workflow"
)

// workflowDispatcher is an optional Dispatcher extension (surface/cluster has it): workflow
// runs as jobs that any worker node executes. With one, POST /v1/workflows/{name}/runs
// enqueues the run and streams its progress from the stored record, whichever node runs
// it; a client that goes away stops the stream, not the run, as for dispatched runs.
type workflowDispatcher interface {
	// SubmitWorkflow enqueues a run or resume; while a job of the same run may still
	// execute it is refused with an error wrapping loop.ErrSessionBusy.
	SubmitWorkflow(ctx context.Context, name string, in workflow.RunInput) error
	// WorkflowDone reports whether owner's run's latest job finished for good.
	WorkflowDone(ctx context.Context, name, owner, runID string) (bool, error)
}

// workflowPoll is how often a dispatched workflow's stream reads its record.
const workflowPoll = 150 * time.Millisecond

// followWorkflow submits a run to the dispatcher and turns the changes of its stored
// record into the engine's events, as if it ran here: a step seen running is
// step_started, one seen ended is step_finished, an approval step waiting is
// step_waiting. It returns when the job is done and the record says how the run ended.
func (s *Server) followWorkflow(ctx context.Context, wd workflowDispatcher, wf *workflow.Workflow, in workflow.RunInput, emit func(workflow.Event)) (workflow.Result, error) {
	st := s.opts.Workflows.Engine.Store
	if err := wf.CheckApprovals(in.Approvals); err != nil {
		return workflow.Result{}, err
	}
	rec, resumed, err := workflow.LoadOwnedRecord(ctx, st, wf.Name, in.Owner, in.RunID)
	if err != nil {
		return workflow.Result{}, err
	}
	seen := map[string]string{} // step → the status last reported
	if resumed {
		for id, r := range rec.Steps {
			if r.Status != workflow.StatusWaiting { // a waiting step is reported again, as the engine does
				seen[id] = r.Status
			}
		}
	} else if err := wf.CheckInputs(in.Inputs); err != nil {
		return workflow.Result{}, err
	}
	if err := wd.SubmitWorkflow(ctx, wf.Name, in); err != nil {
		return workflow.Result{}, err
	}
	emit(workflow.Event{Type: workflow.EventWorkflowStarted, Workflow: wf.Name, RunID: in.RunID, Resumed: resumed})
	kinds := map[string]string{}
	for _, g := range wf.Graph() {
		kinds[g.ID] = g.Kind
	}
	t := time.NewTicker(workflowPoll)
	defer t.Stop()
	var outage time.Time // since when the store has not answered (a database restarting)
	for {
		done, err := wd.WorkflowDone(ctx, wf.Name, in.Owner, in.RunID) // before the record: a done job's record is final
		rec, ok, lerr := workflow.LoadOwnedRecord(ctx, st, wf.Name, in.Owner, in.RunID)
		if ctx.Err() == nil {
			if ferr := waitOutage(&outage, err, lerr); ferr != nil {
				return workflow.Result{}, fmt.Errorf("workflow %s run %s: %w", wf.Name, in.RunID, ferr)
			}
		}
		if ok {
			reportSteps(wf, kinds, rec, seen, emit)
		}
		if done && err == nil && lerr == nil {
			return endFollowed(wf, rec, ok, emit)
		}
		select {
		case <-ctx.Done():
			return workflow.Result{}, ctx.Err()
		case <-t.C:
		}
	}
}

// waitOutage is what one look at a followed run's job and record decides: nil while
// both answered, or while the store is unavailable for less than storeOutageWait (the
// run's job waits for the store and is retried, surface/cluster: so does its stream;
// outage holds since when), else the error that ends the stream.
func waitOutage(outage *time.Time, done, load error) error {
	switch {
	case (done == nil || storeUnavailable(done)) && (load == nil || storeUnavailable(load)) && (done != nil || load != nil):
		if outage.IsZero() {
			*outage = time.Now()
		}
		if time.Since(*outage) > storeOutageWait {
			return fmt.Errorf("the store has not answered for %s: %w", storeOutageWait, errors.Join(done, load))
		}
		return nil
	case done != nil:
		return done
	case load != nil:
		return load
	}
	*outage = time.Time{}
	return nil
}

func reportSteps(wf *workflow.Workflow, kinds map[string]string, rec *workflow.Record, seen map[string]string, emit func(workflow.Event)) {
	for _, id := range wf.StepIDs() {
		r := rec.Steps[id]
		if r == nil || seen[id] == r.Status {
			continue
		}
		seen[id] = r.Status
		ev := workflow.Event{Workflow: wf.Name, RunID: rec.RunID, Step: id, Kind: kinds[id], Status: r.Status}
		switch r.Status {
		case workflow.StatusRunning:
			ev.Type, ev.Status, ev.Items = workflow.EventStepStarted, "", len(r.Items)
		case workflow.StatusWaiting:
			ev.Type, ev.Status = workflow.EventStepWaiting, ""
			if o, ok := r.Output.(map[string]any); ok {
				ev.Prompt, _ = o["prompt"].(string)
			}
		default:
			ev.Type, ev.Output, ev.Error = workflow.EventStepFinished, r.Output, r.Error
		}
		emit(ev)
	}
}

// endFollowed reports the end of a followed run from its final record.
func endFollowed(wf *workflow.Workflow, rec *workflow.Record, ok bool, emit func(workflow.Event)) (workflow.Result, error) {
	if !ok {
		return workflow.Result{}, errors.New("the workflow's job ended without storing a record (see the worker's log)")
	}
	if rec.Status == workflow.RunRunning { // the job was cancelled mid-run
		rec.Status, rec.Error = workflow.RunAborted, "the run's job was cancelled"
	}
	var waiting []string
	for _, id := range wf.StepIDs() {
		if r := rec.Steps[id]; r != nil && r.Status == workflow.StatusWaiting {
			waiting = append(waiting, id)
		}
	}
	emit(workflow.Event{Type: workflow.EventWorkflowFinished, Workflow: wf.Name, RunID: rec.RunID, Status: rec.Status, Outputs: rec.Outputs, Error: rec.Error})
	return workflow.Result{Record: rec, Waiting: waiting}, nil
}
