package cluster

import (
	"context"
	"strings"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/workflow"
)

// Whether a run is live is read from the store, never from River's job state alone.
// River marks a job completed after its worker returns, asynchronously, and a worker
// that was paused past its lease (SIGSTOP, a frozen VM) can, when it wakes, set the
// state of a job another attempt is running or has completed (River's completer
// updates any running job by id). So a job may say running for a run that ended, or
// be retried after its run ended; the store holds the run's own end, written by the
// attempt that ran it under its lease. Every check goes through runEnded (agent runs)
// or workflowEnded (workflow runs): the worker before an attempt (an ended run's job
// completes without touching its session), aborts, and the sessions an abort may reach.
// Done and WorkflowDone stay about the job (finished for good, no retry to come): a
// stream ends on the run's own stored end, and asks the job only when the run is quiet;
// a job whose state a late report reopened is completed by its next attempt, here.

// runEnded reports whether an attempt of runID (RUNID, or a retry's RUNID~N) has a stored
// end other than aborted: the run is over. An aborted end is not: it is what a retry
// writes for the attempt it continues (a dead worker's, one cut by an outage), and an
// abort asked for by a user cancels the job, which is never retried.
func runEnded(runs []loop.RunRecord, runID string) (loop.RunRecord, bool) {
	for _, r := range runs {
		if (r.ID == runID || strings.HasPrefix(r.ID, runID+"~")) && r.Status != "" && r.Status != loop.StatusAborted {
			return r, true
		}
	}
	return loop.RunRecord{}, false
}

// storedEnd reports whether the session's run has ended, by runEnded on its stored runs.
// Without a store (a node that only enqueues and was given none) nothing is known ended.
func (c *Cluster) storedEnd(ctx context.Context, session, runID string) (bool, error) {
	if c.opts.Store == nil {
		return false, nil
	}
	runs, err := c.opts.Store.Runs(ctx, session)
	if err != nil {
		return false, err
	}
	_, ended := runEnded(runs, runID)
	return ended, nil
}

// workflowEnded reports whether owner's workflow run is completed in its stored record: a
// completed run is final (a resume of it reports the record and runs nothing). A run
// that failed or waits for an approval is resumed by a new job with the same key, so it
// is not "ended" for the job that runs it.
func (c *Cluster) workflowEnded(ctx context.Context, name, owner, runID string) (bool, error) {
	if c.opts.Store == nil {
		return false, nil
	}
	rec, ok, err := workflow.LoadOwnedRecord(ctx, c.opts.Store, name, owner, runID)
	if err != nil {
		return false, err
	}
	return ok && rec.Status == workflow.RunCompleted, nil
}
