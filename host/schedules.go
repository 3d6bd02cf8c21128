package host

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/workflow"
)

// A schedule's fire ([[schedules]], docs/schedules.md) is a run like any other: it comes
// in through the door as the schedule's user (their own principal and role, never the
// operator's), so it is authorised, admitted, audited (the run.start record names the
// schedule and the tick) and charged as that user's run. Its session is named by the
// schedule and the tick, so a fire retried after its node died continues the same
// session instead of starting a second run.

// ErrNoSchedule is wrapped by the error for a schedule the manifest does not declare.
var ErrNoSchedule = errors.New("no such schedule")

// ScheduleFire is what one fire did.
type ScheduleFire struct {
	Schedule string      `json:"schedule"`
	Tick     time.Time   `json:"tick"`
	Missed   bool        `json:"missed,omitempty"`
	User     string      `json:"user"`
	Session  string      `json:"session"` // the run's session, or the workflow run's id
	Run      string      `json:"run,omitempty"`
	Status   loop.Status `json:"status"`
	Reason   loop.Reason `json:"reason,omitempty"`
}

// scheduleKey carries the fire a run is for, from FireSchedule to the door's audit.
type scheduleKey struct{}

type fireOf struct {
	name   string
	tick   time.Time
	missed bool
}

// ScheduleSession is the session (or workflow run id) of a schedule's tick.
func ScheduleSession(name string, tick time.Time) string {
	return "sched-" + name + "-" + strconv.FormatInt(tick.Unix(), 10)
}

// FireSchedule fires a declared schedule's tick as its user, who must exist in the
// store; see above. The error is for a fire that could not start; a run that started
// and failed is in the result's status.
func (h *Host) FireSchedule(ctx context.Context, name string, tick time.Time, missed bool) (ScheduleFire, error) {
	tick = tick.UTC().Truncate(time.Second)
	return h.fire(ctx, name, tick, missed, ScheduleSession(name, tick))
}

// RunScheduleNow fires a schedule now, by hand (`schedules run`): as FireSchedule, in a
// session of its own (sched-NAME-UNIXTIME-ID), so that it is never taken for the tick
// of the same second, nor two fires by hand for one.
func (h *Host) RunScheduleNow(ctx context.Context, name string) (ScheduleFire, error) {
	tick := time.Now().UTC().Truncate(time.Second)
	return h.fire(ctx, name, tick, false, ScheduleSession(name, tick)+"-"+shortID())
}

func (h *Host) fire(ctx context.Context, name string, tick time.Time, missed bool, session string) (ScheduleFire, error) {
	s, ok := h.Manifest.Schedule(name)
	if !ok {
		return ScheduleFire{}, fmt.Errorf("%w: %q (schedules: %s)", ErrNoSchedule, name, strings.Join(h.ScheduleNames(), ", "))
	}
	out := ScheduleFire{Schedule: name, Tick: tick, Missed: missed, Session: session}
	p, err := h.scheduleUser(ctx, s.User)
	if err != nil {
		return out, fmt.Errorf("schedule %s: %w", name, err)
	}
	out.User = p.Name
	ctx = context.WithValue(access.WithPrincipal(ctx, p), scheduleKey{}, fireOf{name, tick, missed})
	if s.Workflow != "" {
		return h.fireWorkflow(ctx, p, s.Workflow, s.InputsJSON(), out)
	}
	runs, err := h.Store.Runs(ctx, out.Session)
	if err != nil {
		return out, fmt.Errorf("schedule %s: %w", name, err)
	}
	prompt := s.Prompt
	if s.RecentSessions > 0 && len(runs) == 0 {
		recent, err := h.recentSessions(ctx, p, s.RecentSessions)
		if err != nil {
			return out, fmt.Errorf("schedule %s: recent sessions: %w", name, err)
		}
		prompt += "\n" + recent
	}
	in := loop.RunInput{SessionID: out.Session, RunID: "fire", User: identity(p), Agent: s.Agent,
		Messages: []loop.Message{loop.UserMessage(prompt)}}
	for _, r := range runs {
		if r.Status != "" && r.Status != loop.StatusAborted { // a retry of a fire that ended
			out.Run, out.Status, out.Reason = r.ID, r.Status, r.Reason
			return out, nil
		}
	}
	if len(runs) > 0 { // a retry of a fire that stopped: continue its session (rule L14)
		in.RunID, in.Messages = fmt.Sprintf("fire~%d", len(runs)+1), nil
	}
	res, err := h.Door().Run(ctx, p, in, nil)
	out.Run, out.Status, out.Reason = in.RunID, res.Status, res.Reason
	return out, err
}

func (h *Host) fireWorkflow(ctx context.Context, p access.Principal, name string, inputs []byte, out ScheduleFire) (ScheduleFire, error) {
	f := ctx.Value(scheduleKey{}).(fireOf)
	err := h.Audit(ctx, audit.Record{Action: audit.ActionWorkflowRun, Actor: p.Name, Target: workflow.RunSession(name, p.ID, out.Session),
		Detail: map[string]string{"actor_id": p.ID, "actor_role": string(p.Role), "schedule": f.name, "tick": f.tick.Format(time.RFC3339)}})
	if err != nil {
		return out, fmt.Errorf("audit: %w", err)
	}
	res, err := h.RunWorkflow(ctx, name, workflow.RunInput{RunID: out.Session, Owner: p.ID, Inputs: inputs})
	if res.Record != nil {
		out.Run = res.Record.RunID
		out.Status = loop.Status(res.Record.Status)
	}
	return out, err
}

// scheduleUser is the principal of the user a schedule runs as: a user of the store,
// looked up by name or id when it fires (one removed since is refused, not run as a
// label).
func (h *Host) scheduleUser(ctx context.Context, name string) (access.Principal, error) {
	as, ok := h.Access()
	if !ok {
		return access.Principal{}, fmt.Errorf("the %s store keeps no users: a schedule runs as one", h.Manifest.Store.Kind)
	}
	u, found, err := access.Lookup(ctx, as, name)
	if err != nil {
		return access.Principal{}, err
	}
	if !found {
		return access.Principal{}, fmt.Errorf("user %q: %w (add it with `agenthost users add`)", name, access.ErrNoSuchUser)
	}
	return access.Principal{ID: u.ID, Name: u.Name, Role: u.Role}, nil
}

// scheduleDetail adds the fire a run is for to its run.start audit detail.
func scheduleDetail(ctx context.Context, detail map[string]string) map[string]string {
	if f, ok := ctx.Value(scheduleKey{}).(fireOf); ok {
		detail["schedule"] = f.name
		detail["tick"] = f.tick.Format(time.RFC3339)
		if f.missed {
			detail["missed"] = "true"
		}
	}
	return detail
}

// ScheduleNames lists the declared schedules in manifest order.
func (h *Host) ScheduleNames() []string {
	var out []string
	for _, s := range h.Manifest.Schedules {
		out = append(out, s.Name)
	}
	return out
}
