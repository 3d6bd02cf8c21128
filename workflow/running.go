package workflow

import (
	"context"
	"fmt"

	"github.com/agenthost/agenthost/loop"
)

// A lone tool step's start is not stored (fold.go): its call's first write opens the
// call's run in the step's session, in the transaction that stored the step's running
// row before, and a reader of the record (LoadOwnedRecord: `workflow status`, the HTTP
// views, a cluster's stream of a dispatched run) shows the step running from that open
// run. So the record reads as it did, from the same commit on: a step is running from
// its call's first write to its end.
//
// Only a run whose head says running is looked at, and only its steps with no row or
// with a row of an earlier attempt that failed (one that ended ok, was skipped, waits
// or was stored running needs nothing): one read of the step's session's runs each.
// The engine's own read of a record to resume it (Engine.open) does not look: a step
// with no row, or with a row stored running, is run again either way.

// showRunning marks running the steps of r (read with its head h, owner's) whose
// session has a run with no end that started after the step's stored end, if any.
func showRunning(ctx context.Context, st loop.SessionStore, r *Record, h *storedHead, owner string) error {
	if r.Status != RunRunning {
		return nil
	}
	for _, id := range h.StepRows {
		sr := r.Steps[id]
		if sr != nil && sr.Status != StatusFailed {
			continue
		}
		runs, err := st.Runs(ctx, StepSession(r.Workflow, owner, r.RunID, id, -1))
		if err != nil {
			return fmt.Errorf("workflow %s run %s: step %s's session: %w", r.Workflow, r.RunID, id, err)
		}
		for _, run := range runs {
			if run.Status == "" && (sr == nil || run.Started.After(sr.Ended)) {
				r.Steps[id] = &StepRecord{Status: StatusRunning, Started: run.Started}
				break
			}
		}
	}
	return nil
}
