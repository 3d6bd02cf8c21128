package workflow

import (
	"context"
	"errors"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// A step's session belongs to its run alone (StepSession), and one process runs a run at
// a time (the run's own lease, Engine.Run). So a step that finds its session busy
// (loop.ErrSessionBusy) has met an earlier attempt of its own run: one whose process
// ended it but could not give the lease back yet (the database was restarting: the
// loop gives it back as soon as the store answers; in this process it is taken over at
// once, loop/ownlease.go), or one paused or cut off past its lease, whose lease dies
// within loop.LeaseTTL and is then taken over, its late writes refused by fencing. Such
// a step waits for the session and calls again; it is never failed for it (a failed
// step used to fail the whole run, and a cluster completed the run's job). The wait is
// not an attempt of the step's retries, and lasts until the run's context ends.

// busyWaitMax bounds the pause between two tries of a busy step session.
const busyWaitMax = time.Second

// The same holds for a step the host's admission refused ([admission]: its runs, queue
// or a user's share were full, loop.ErrOverloaded): the step did not start, and it
// waits as long as the refusal asks (Retry-After) before it calls again, instead of
// failing its run for the host being busy.

// onceFree is once, waiting while the step's session is held by an earlier attempt or
// the host's admission refuses it.
func (s *sched) onceFree(ctx context.Context, cs *cstep, vars map[string]any, item int) (any, error) {
	pause := 50 * time.Millisecond
	for waited := false; ; waited = true {
		out, err := s.once(ctx, cs, vars, item)
		busy := errors.Is(err, loop.ErrSessionBusy)
		secs, over := loop.RetryAfterOf(err)
		if err == nil || !(busy || over) || ctx.Err() != nil {
			return out, err
		}
		if !waited && item < 0 && cs.Tool != "" {
			// The call wrote nothing, so neither did the step's start (fold.go): store
			// it now, so the record shows the step running while it waits.
			s.mu.Lock()
			serr := s.save(ctx)
			s.mu.Unlock()
			if serr != nil {
				return nil, serr
			}
		}
		wait := pause
		if over {
			wait = time.Duration(secs) * time.Second
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C: // the earlier attempt's lease is released or dies within LeaseTTL
		}
		if busy {
			pause = min(2*pause, busyWaitMax)
		}
	}
}

// callError is a tool step's failed call: the text its result gave, wrapping the run's
// error so that a busy session or an unavailable store is told from a tool's failure.
type callError struct {
	text string
	err  error
}

func (e *callError) Error() string { return e.text }
func (e *callError) Unwrap() error { return e.err }

// storeOutage reports whether a step's error is its store's failure (a database
// restarting or unreachable; the store marks it with StoreUnavailable, loop/outage.go):
// the step was cut short, not failed, and a resume of the run runs it again.
func storeOutage(err error) bool {
	var u interface{ StoreUnavailable() bool }
	return errors.As(err, &u) && u.StoreUnavailable()
}
