package schedule

import (
	"context"
	"sync"
	"time"
)

// Clock is the time a Scheduler reads and waits on; the system's is System.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// System is the wall clock.
var System Clock = systemClock{}

// Entry is one schedule a Scheduler runs.
type Entry struct {
	Name   string
	Spec   Spec
	Missed Policy
}

// State keeps, per schedule, the latest tick handled (fired or skipped), so that a
// node that starts knows which ticks it missed. A store's key-value pairs are one.
type State interface {
	Last(ctx context.Context, name string) (time.Time, bool, error)
	SetLast(ctx context.Context, name string, tick time.Time) error
}

// Options configure a Scheduler.
type Options struct {
	Entries []Entry
	State   State
	Clock   Clock // nil: System
	// Fire fires a schedule's tick (missed: it stands for ticks missed while no node
	// ran). It is called from the schedule's own goroutine, one tick at a time: a fire
	// that outlasts the next tick delays it, and the ticks that passed meanwhile fire
	// once. In a cluster it claims the tick (one node of all fires it) and returns.
	Fire func(ctx context.Context, name string, tick time.Time, missed bool) error
	// Log is told what a schedule skipped and what failed (nil: nothing).
	Log func(format string, args ...any)
}

// Run runs every entry until ctx ends: each waits for its next tick, fires it through
// Fire and records it handled in State. Ticks before the first start of a schedule
// (State has no tick for it) are not missed: they were not due to anyone.
func Run(ctx context.Context, o Options) {
	if o.Clock == nil {
		o.Clock = System
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	started := o.Clock.Now()
	var wg sync.WaitGroup
	for _, e := range o.Entries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o.run(ctx, e, started)
		}()
	}
	wg.Wait()
}

func (o Options) run(ctx context.Context, e Entry, started time.Time) {
	last := o.last(ctx, e, started)
	for ctx.Err() == nil {
		now := o.Clock.Now()
		if d, due := Decide(e.Spec, e.Missed, last, started, now); due {
			last = d.Handled
			if err := o.State.SetLast(ctx, e.Name, d.Handled); err != nil && ctx.Err() == nil {
				o.Log("schedule %s: record tick %s: %v", e.Name, d.Tick.UTC().Format(time.RFC3339), err)
			}
			switch {
			case !d.Fire:
				o.Log("schedule %s: skipped the tick(s) missed up to %s (missed = %q)", e.Name, d.Tick.UTC().Format(time.RFC3339), e.Missed)
			default:
				if err := o.Fire(ctx, e.Name, d.Tick, d.Missed); err != nil && ctx.Err() == nil {
					o.Log("schedule %s: fire %s: %v", e.Name, d.Tick.UTC().Format(time.RFC3339), err)
				}
			}
			continue
		}
		next := e.Spec.Next(later(last, now))
		if next.IsZero() {
			return // a cron expression with no more dates
		}
		select {
		case <-ctx.Done():
		case <-o.Clock.After(next.Sub(now)):
		}
	}
}

// last is the tick the schedule handled last, or started when it never ran (recorded,
// so that a later start knows what it missed). A state that does not answer counts as
// never ran: this node fires from now on rather than not at all.
func (o Options) last(ctx context.Context, e Entry, started time.Time) time.Time {
	t, ok, err := o.State.Last(ctx, e.Name)
	if err != nil {
		o.Log("schedule %s: read the last tick: %v", e.Name, err)
	}
	if ok && err == nil {
		return t
	}
	if err == nil {
		if err := o.State.SetLast(ctx, e.Name, started); err != nil {
			o.Log("schedule %s: record the start: %v", e.Name, err)
		}
	}
	return started
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
