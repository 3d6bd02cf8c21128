package serve

import (
	"context"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/schedule"
	"github.com/agenthost/agenthost/surface/cluster"
)

// RunSchedules fires the manifest's [[schedules]] until ctx ends (docs/schedules.md).
// With cl (a cluster), each tick is claimed in PostgreSQL (cluster.ClaimFire) and fired
// by one worker of the cluster, whichever node's scheduler claimed it; without, this
// node fires it through the host's door. clock nil is the wall clock.
func RunSchedules(ctx context.Context, h *host.Host, cl *cluster.Cluster, clock schedule.Clock, logf func(string, ...any)) {
	if len(h.Manifest.Schedules) == 0 {
		return
	}
	var entries []schedule.Entry
	for _, s := range h.Manifest.Schedules {
		entries = append(entries, schedule.Entry{Name: s.Name, Spec: s.Spec(), Missed: s.Policy()})
	}
	fire := func(ctx context.Context, name string, tick time.Time, missed bool) error {
		at := tick.UTC().Format(time.RFC3339)
		if cl != nil {
			claimed, err := cl.ClaimFire(ctx, name, tick, missed)
			if claimed {
				logf("schedule %s: claimed tick %s for the cluster", name, at)
			}
			return err
		}
		f, err := h.FireSchedule(ctx, name, tick, missed)
		if err == nil {
			logf("schedule %s: fired tick %s as %s: session %s run %s %s", name, at, f.User, f.Session, f.Run, f.Status)
		}
		return err
	}
	schedule.Run(ctx, schedule.Options{Entries: entries, State: h.ScheduleState(), Clock: clock, Fire: fire, Log: logf})
}

// firer is the host's FireSchedule as the cluster's workers call it.
type firer struct{ h *host.Host }

func (f firer) FireSchedule(ctx context.Context, name string, tick time.Time, missed bool) (string, error) {
	res, err := f.h.FireSchedule(ctx, name, tick, missed)
	return string(res.Status), err
}
