package workflow

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agenthost/agenthost/loop"
)

// A lone tool step's start and end are not rows of their own while its run goes on
// (fold.go): the start is its call's open run, and on a store that keeps a run's note
// (loop.RunNoter: SQLite) the end is that call's run's note, stored in the call's last
// write, in the transaction that stores its result. Either is in the step's session
// (StepSession), so what a row held is there from the same commit on, and a crash after
// the call's end cannot lose the step's end: the call is not made again.
//
// The ends ride with the run's next write of its own (any: a fan-out's start, a failed
// step's end, the final record), which stores every row that changed, or, when no row
// was stored, the record whole in its head (whole.go): a record whose head says it ended
// has every step, in rows or in the head. So only a record whose head says running is
// looked at, and only its steps with no row, a row stored running or a row of an
// earlier attempt that failed: one read of the step's session's runs each.
// LoadOwnedRecord (`workflow status`, the HTTP views, a cluster's stream of a dispatched
// run) takes both, the end and the running state; Engine.open, which resumes the run,
// takes the ends only (a step shown running is run again either way, as one with no row).
//
// A row of kv in each call's end cost a page of another table in every such commit;
// the note rides in the run row the commit writes anyway (BENCHMARKS.md, "Workflow step,
// round six").

// fromCalls sets the steps of r (read with its head h, owner's) that their calls'
// runs say ended ok, or, with running, that a call is running for.
func fromCalls(ctx context.Context, st loop.SessionStore, r *Record, h *storedHead, owner string, running bool) error {
	if r.Status != RunRunning {
		return nil
	}
	for _, id := range h.StepRows {
		sr := r.Steps[id]
		if sr != nil && sr.Status != StatusFailed && sr.Status != StatusRunning {
			continue
		}
		runs, err := st.Runs(ctx, StepSession(r.Workflow, owner, r.RunID, id, -1))
		if err != nil {
			return fmt.Errorf("workflow %s run %s: step %s's session: %w", r.Workflow, r.RunID, id, err)
		}
		if end := noted(runs, sr); end != nil {
			r.Steps[id] = end
			continue
		}
		if !running || (sr != nil && sr.Status == StatusRunning) {
			continue
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

// noted is the step end the latest of runs with a note holds, when it is later than
// sr (nil, running, or failed before it), else nil.
func noted(runs []loop.RunRecord, sr *StepRecord) *StepRecord {
	for i := len(runs) - 1; i >= 0; i-- {
		if runs[i].Note == "" || runs[i].Status != loop.StatusCompleted {
			continue
		}
		var end StepRecord
		if json.Unmarshal([]byte(runs[i].Note), &end) != nil || end.Status != StatusOK {
			return nil
		}
		if sr != nil && sr.Status == StatusFailed && !end.Ended.After(sr.Ended) {
			return nil
		}
		return &end
	}
	return nil
}
