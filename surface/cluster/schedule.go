package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/agenthost/agenthost/loop"
)

// A schedule's tick is a River job too (kind agenthost_schedule), whose unique key is
// (schedule, tick) in every state: every node's scheduler claims each tick by inserting
// its job (ClaimFire), PostgreSQL's unique index lets exactly one insert through, and
// one worker runs the fire. A tick's job outlives its run by River's retention (a
// day); a node that comes back later than that reads the tick as handled from the
// store (schedule.State) and does not claim it again.

// ScheduleFirer fires a schedule's tick; serve adapts host.(*Host).FireSchedule.
type ScheduleFirer interface {
	FireSchedule(ctx context.Context, name string, tick time.Time, missed bool) (status string, err error)
}

// ScheduleArgs are a schedule job's arguments; Schedule and Tick are its unique key.
type ScheduleArgs struct {
	Schedule string    `json:"schedule" river:"unique"`
	Tick     time.Time `json:"tick" river:"unique"`
	Missed   bool      `json:"missed,omitempty"`
}

// Kind implements river.JobArgs.
func (ScheduleArgs) Kind() string { return "agenthost_schedule" }

// ClaimFire claims a schedule's tick for the cluster: it reports whether this call
// queued its fire (false: another node, or an earlier call, already had).
func (c *Cluster) ClaimFire(ctx context.Context, name string, tick time.Time, missed bool) (bool, error) {
	res, err := c.insert(ctx, ScheduleArgs{Schedule: name, Tick: tick.UTC().Truncate(time.Second), Missed: missed}, &river.InsertOpts{
		MaxAttempts: 5,
		UniqueOpts:  river.UniqueOpts{ByArgs: true, ByState: rivertype.JobStates()},
	})
	if err != nil {
		return false, fmt.Errorf("claim schedule %s tick %s: %w", name, tick.UTC().Format(time.RFC3339), err)
	}
	return !res.UniqueSkippedAsDuplicate, nil
}

type scheduleWorker struct {
	river.WorkerDefaults[ScheduleArgs]
	c *Cluster
}

// Work fires the tick. A fire that cannot start (its user does not exist) is not
// retried: the same fire would be refused again; a busy session or a refusal by
// admission waits; a shutdown hands the job back to River.
func (w *scheduleWorker) Work(ctx context.Context, job *river.Job[ScheduleArgs]) error {
	a := job.Args
	status, err := w.c.opts.Schedules.FireSchedule(ctx, a.Schedule, a.Tick, a.Missed)
	if l := w.c.opts.RunLog; l != nil {
		l.LogAttrs(ctx, slog.LevelInfo, "schedule fired", slog.String("schedule", a.Schedule),
			slog.String("tick", a.Tick.UTC().Format(time.RFC3339)), slog.String("status", status), slog.Int("attempt", job.Attempt))
	}
	var over *loop.OverloadError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, loop.ErrSessionBusy):
		return river.JobSnooze(time.Second)
	case errors.As(err, &over):
		return river.JobSnooze(over.RetryAfter)
	case ctx.Err() != nil:
		return fmt.Errorf("schedule %s stopped: %w", a.Schedule, context.Cause(ctx))
	case status == "":
		w.c.log().Warn("cluster: schedule not fired", "schedule", a.Schedule, "err", err)
		return river.JobCancel(err)
	}
	return err
}
