package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Spec is a schedule's grid: Next returns the first tick strictly after t, or the zero
// time when there is none (a cron expression that matches no date).
type Spec interface {
	Next(t time.Time) time.Time
}

// Policy is what a schedule does with the ticks that fell due while no node ran it.
type Policy string

const (
	// Skip drops missed ticks: the schedule fires again at its next tick.
	Skip Policy = "skip"
	// RunOnce fires once for all the ticks missed, at once, named by the latest of them.
	RunOnce Policy = "run_once"
)

// ParsePolicy reads a missed policy; "" is Skip.
func ParsePolicy(s string) (Policy, error) {
	switch Policy(s) {
	case "", Skip:
		return Skip, nil
	case RunOnce:
		return RunOnce, nil
	}
	return "", fmt.Errorf("invalid missed policy %q: want %q or %q", s, Skip, RunOnce)
}

// MinEvery is the shortest interval a schedule may have.
const MinEvery = time.Second

// cronParser reads the standard five fields (minute hour day-of-month month
// day-of-week), the @hourly-style descriptors and a CRON_TZ= or TZ= prefix.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Parse returns the grid of a cron expression or of an interval: exactly one is given.
// An interval's ticks are the multiples of it in absolute time (every "1h" fires on
// the hour), the same on every node; "@every" in a cron expression is refused for that
// reason (its ticks would start from whenever the node started). A cron expression
// that matches no date (February 30th) is refused too.
func Parse(expr string, every time.Duration) (Spec, error) {
	switch {
	case expr != "" && every != 0:
		return nil, errors.New("give cron or every, not both")
	case expr == "" && every == 0:
		return nil, errors.New("give cron (e.g. \"0 3 * * *\") or every (e.g. \"1h\")")
	case every != 0:
		if every < MinEvery {
			return nil, fmt.Errorf("every %s: at least %s", every, MinEvery)
		}
		return Interval(every), nil
	}
	if strings.Contains(expr, "@every") {
		return nil, fmt.Errorf("cron %q: write an interval as every = \"…\" (its ticks are aligned on every node)", expr)
	}
	s, err := cronParser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("cron %q: %v", expr, err)
	}
	if s.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return nil, fmt.Errorf("cron %q matches no date", expr)
	}
	return s, nil
}

// Interval is a grid of the multiples of a duration in absolute time.
type Interval time.Duration

// Next implements Spec.
func (d Interval) Next(t time.Time) time.Time {
	return t.Truncate(time.Duration(d)).Add(time.Duration(d))
}

// Latest returns the latest tick in (after, now], if any. It looks back from now in
// doubling windows rather than stepping from after, so a schedule that has not run for
// months costs a few steps, not one per tick missed.
func Latest(s Spec, after, now time.Time) (time.Time, bool) {
	first := s.Next(after)
	if first.IsZero() || first.After(now) {
		return time.Time{}, false
	}
	for w := time.Minute; ; w *= 2 {
		start := now.Add(-w)
		if !start.After(after) {
			start = after
		}
		t := s.Next(start)
		if t.IsZero() || t.After(now) {
			continue // no tick in this window: a wider one
		}
		for {
			n := s.Next(t)
			if n.IsZero() || n.After(now) {
				return t, true
			}
			t = n
		}
	}
}

// Decision is what a node does with the ticks due when it wakes.
type Decision struct {
	Tick    time.Time // the tick the fire is named by: the latest due
	Fire    bool      // fire it (false: the missed ticks are skipped)
	Missed  bool      // every due tick fell before this node started: they were missed
	Handled time.Time // the ticks up to here are done with (fired or skipped)
}

// Decide says what to do at now with the ticks due after last (the ticks up to last
// were handled): none due, nothing (ok false). A tick that fell due after started (this
// node was running) fires, once for all the ticks due: a node that wakes late does not
// fire twice. Ticks all before started were missed while no node ran the schedule;
// RunOnce fires once for them, Skip drops them.
func Decide(s Spec, p Policy, last, started, now time.Time) (Decision, bool) {
	tick, ok := Latest(s, last, now)
	if !ok {
		return Decision{}, false
	}
	d := Decision{Tick: tick, Handled: tick, Missed: tick.Before(started)}
	d.Fire = !d.Missed || p == RunOnce
	return d, true
}
