package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/workflow"
)

// A workflow run is a River job too (kind agenthost_workflow): any node accepts it, a
// worker runs it on the workflow engine, and a worker that dies leaves a job River
// rescues; its retry resumes the run from its stored record (workflow), so a step
// that ended is not run again. The record's lease (the engine's, on the session
// workflow:NAME:RUNID) keeps two workers off one run: a retry that finds it held waits.

// WorkflowRunner runs a declared workflow by name; host.(*Host).RunWorkflow is one.
type WorkflowRunner interface {
	RunWorkflow(ctx context.Context, name string, in workflow.RunInput) (workflow.Result, error)
}

// WorkflowArgs are a workflow job's arguments. Workflow, Owner and Run are its unique key
// among the jobs that may still execute: a run has at most one live job, and a resume
// (with decisions) is a new job once the last one ended. The owner (the id of the user
// the run is for, workflow.RunInput.Owner) is part of the key, so another user's run of
// the same id is another job and neither can hold the other's key. Payload holds the
// inputs and decisions, sealed with the store's keys (bound to workflow, owner and run)
// and dropped once the job has ended (atrest.go); Inputs and Approvals are only read,
// from jobs queued before payloads were sealed.
type WorkflowArgs struct {
	Workflow  string                       `json:"workflow" river:"unique"`
	Owner     string                       `json:"owner,omitempty" river:"unique"`
	Run       string                       `json:"run" river:"unique"`
	Payload   json.RawMessage              `json:"payload,omitempty"`
	Inputs    json.RawMessage              `json:"inputs,omitempty"`
	Approvals map[string]workflow.Decision `json:"approvals,omitempty"`
}

// Kind implements river.JobArgs.
func (WorkflowArgs) Kind() string { return "agenthost_workflow" }

// liveStates are the job states a second job of the same run may not be inserted in.
var liveStates = []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending,
	rivertype.JobStateRetryable, rivertype.JobStateRunning, rivertype.JobStateScheduled}

// SubmitWorkflow enqueues a run (or resume) of a workflow. While a job of the same run
// may still execute, it enqueues nothing and returns an error wrapping
// loop.ErrSessionBusy: one decision in PostgreSQL, whichever node asks.
func (c *Cluster) SubmitWorkflow(ctx context.Context, name string, in workflow.RunInput) error {
	payload, err := c.sealWorkflow(name, in)
	if err != nil {
		return fmt.Errorf("enqueue workflow %s run %q: %w", name, in.RunID, err)
	}
	res, err := c.insert(ctx, WorkflowArgs{Workflow: name, Owner: in.Owner, Run: in.RunID, Payload: payload}, &river.InsertOpts{
		MaxAttempts: 10,
		UniqueOpts:  river.UniqueOpts{ByArgs: true, ByState: liveStates},
	})
	if err != nil {
		return fmt.Errorf("enqueue workflow %s run %q: %w", name, in.RunID, err)
	}
	if res.UniqueSkippedAsDuplicate {
		return fmt.Errorf("workflow %s run %q: %w", name, in.RunID, loop.ErrSessionBusy)
	}
	return nil
}

// WorkflowDone reports whether owner's run's latest job has finished for good.
func (c *Cluster) WorkflowDone(ctx context.Context, name, owner, runID string) (bool, error) {
	var state string
	err := c.pool.QueryRow(ctx, `SELECT state FROM river_job WHERE kind = 'agenthost_workflow' AND args->>'workflow' = $1
		AND COALESCE(args->>'owner', '') = $2 AND args->>'run' = $3 ORDER BY id DESC LIMIT 1`, name, owner, runID).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return true, nil
	}
	if err != nil {
		return false, queueUnavailable(err)
	}
	switch rivertype.JobState(state) {
	case rivertype.JobStateCompleted, rivertype.JobStateCancelled, rivertype.JobStateDiscarded:
		return true, nil
	}
	return false, nil
}

// workflowWorker executes workflow jobs.
type workflowWorker struct {
	river.WorkerDefaults[WorkflowArgs]
	c *Cluster
}

// Work runs or resumes the job's workflow run. A run that ended (completed, failed,
// interrupted by an approval) is a finished job: a failed step is the run's result, not
// the job's error. A run cut short (the worker stopping, the store failing) is retried.
func (w *workflowWorker) Work(ctx context.Context, job *river.Job[WorkflowArgs]) error {
	a := job.Args
	in, err := w.c.openWorkflow(a)
	if err != nil {
		return river.JobCancel(err) // never retried: the same payload does not open again
	}
	if ended, err := w.c.workflowEnded(ctx, a.Workflow, a.Owner, a.Run); err == nil && ended {
		// A late attempt (ended.go): the run completed, its job completes without
		// touching it. An error here is met again by the run itself, below.
		w.c.log().Warn("cluster: the workflow run has completed: its job completes without touching it", "workflow", a.Workflow, "run", a.Run)
		return nil
	}
	res, err := w.c.opts.Workflows.RunWorkflow(ctx, a.Workflow, in)
	switch {
	case errors.Is(err, loop.ErrSessionBusy):
		return river.JobSnooze(time.Second) // a live worker (or one not yet known dead) holds the run
	case errors.Is(err, workflow.ErrInputs):
		// Never retried: the same inputs are refused again. The job (and the log) keep
		// the error's kind, not its text, which may quote the inputs.
		w.c.log().Warn("cluster: workflow inputs refused", "workflow", a.Workflow, "run", a.Run)
		return river.JobCancel(fmt.Errorf("workflow %s run %s: %w", a.Workflow, a.Run, workflow.ErrInputs))
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), river.ErrJobCancelledRemotely):
		return river.JobCancel(fmt.Errorf("workflow %s run %s aborted", a.Workflow, a.Run))
	case ctx.Err() != nil:
		return fmt.Errorf("workflow %s run %s stopped: %w", a.Workflow, a.Run, context.Cause(ctx))
	case err != nil: // a store outage, most often: River retries once the store answers
		return w.c.afterStore(ctx, w.c.retryWorkflow(err))
	case res.Record != nil && res.Record.Status == workflow.RunAborted:
		return w.c.retryWorkflow(fmt.Errorf("workflow %s run %s aborted: %s", a.Workflow, a.Run, res.Record.Error))
	}
	return nil
}

func (c *Cluster) retryWorkflow(err error) error {
	c.log().Warn("cluster: workflow run retried", "err", err)
	return err
}
