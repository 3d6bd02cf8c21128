package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/agenthost/agenthost/loop"
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
				switch r.Status {
				case "":
					return w.retry(fmt.Errorf("run %s: its end could not be stored (%v): retried from the stored session", runID, runErr))
				case loop.StatusAborted:
					// Closed by a later attempt that took the session over (this worker
					// was paused or cut off past its lease): this attempt does not decide
					// the job. River retries it, and the retry finds the run's end in the
					// store or continues it (ended.go).
					return w.retry(fmt.Errorf("run %s: this attempt was taken over: the job is decided from the stored session", runID))
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

// afterStore returns err once the store answers again, or when the job's context ends:
// an error returned while the database is down could not be recorded (River's completer
// gives up), and the job would stay running until River rescues it.
func (c *Cluster) afterStore(ctx context.Context, err error) error {
	wait, warned := 100*time.Millisecond, false
	for {
		if _, perr := c.opts.Store.Runs(ctx, "agenthost-probe"); perr == nil {
			return err
		} else if !warned {
			c.log().Warn("cluster: the store is unreachable: the job waits for it, then River retries it", "err", err, "probe", perr)
			warned = true
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait): // probing an unreachable database, with backoff
		}
		wait = min(2*wait, storeWaitMax)
	}
}

// queueUnavailable marks an error of River's table that says the database is unreachable
// (store/postgres.Unreachable) as the store's: StoreUnavailable() is true, so a stream
// waiting on a job's end waits for the database as it does for the session's (surface/
// server) instead of ending. Others are returned unchanged.
func queueUnavailable(err error) error {
	if err != nil && postgres.Unreachable(err) {
		return &unavailableError{err}
	}
	return err
}

type unavailableError struct{ err error }

func (e *unavailableError) Error() string          { return e.err.Error() }
func (e *unavailableError) Unwrap() error          { return e.err }
func (e *unavailableError) StoreUnavailable() bool { return true }

// insert enqueues a job. A connection the pool kept across a database restart fails at
// its first use; the pool drops it, so the insert is tried again, a few times, before
// its error is returned, marked as the store's when the database is unreachable.
func (c *Cluster) insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	wait := 50 * time.Millisecond
	for try := 1; ; try++ {
		res, err := c.client.Insert(ctx, args, opts)
		if err == nil || !postgres.Unreachable(err) || try == 4 {
			return res, queueUnavailable(err)
		}
		select {
		case <-ctx.Done():
			return res, queueUnavailable(err)
		case <-time.After(wait): // a fresh connection, or the database back
		}
		wait *= 2
	}
}
