package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/agenthost/agenthost/store/postgres"
)

// Store outages. A run writes its progress to PostgreSQL at every step (rule L21); when
// the database goes away, the write fails and the loop ends the run as failed, but it
// cannot store that end either. The job used to be completed all the same, and the run
// stayed open forever, with a tool call that had no result. Now the job is done only
// when the run's end is in the store: otherwise the worker waits for the database to
// answer and returns an error, so River retries the job with its backoff. The retry
// continues the session under RUNID~N from what was stored (the dead attempt is closed
// as aborted when the retry takes the session's lease, which the dead attempt gives
// back as soon as the database answers), and the loop runs again only the tool calls
// whose results were not stored (L14). A call that ran but whose result could not be
// stored runs again: tool calls are at least once.

// storeWaitMax bounds the pause between two probes of an unreachable store.
const storeWaitMax = 2 * time.Second

// endStored returns nil when the run's job is done: its end is stored, or it did not
// start for a reason of its own (an unknown agent). It returns an error, for River to
// retry the job, when the run's end is not stored or the run could not start because
// the store failed. While the store does not answer it waits, probing, until the job's
// context ends: an error returned while the database is down could not be recorded.
func (w *runWorker) endStored(ctx context.Context, session, runID string, runErr error) error {
	probeFailed := false
	wait := 100 * time.Millisecond
	for {
		runs, err := w.c.opts.Store.Runs(ctx, session)
		if err == nil {
			for _, r := range runs {
				if r.ID != runID {
					continue
				}
				if r.Status == "" {
					return w.retry(fmt.Errorf("run %s: its end could not be stored (%v): retried from the stored session", runID, runErr))
				}
				return nil
			}
			if runErr != nil && (probeFailed || postgres.Unreachable(runErr)) {
				return w.retry(fmt.Errorf("run %s did not start: the store failed: %w", runID, runErr))
			}
			return nil
		}
		if !probeFailed {
			w.c.log().Warn("cluster: the store is unreachable: the run waits for it, then River retries it", "run", runID, "session", session, "err", err, "run_err", runErr)
		}
		probeFailed = true
		select {
		case <-ctx.Done():
			return fmt.Errorf("run %s: the store stayed unreachable: %w", runID, context.Cause(ctx))
		case <-time.After(wait): // probing an unreachable database, with backoff
		}
		wait = min(2*wait, storeWaitMax)
	}
}

// log is the cluster's logger (Options.Log), or one that discards.
func (c *Cluster) log() *slog.Logger {
	if c.opts.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.opts.Log
}

func (w *runWorker) retry(err error) error {
	w.c.log().Warn("cluster: run retried", "err", err)
	return err
}
