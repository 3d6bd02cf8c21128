package host

import (
	"context"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/insights"
	"github.com/agenthost/agenthost/loop"
)

// minMeasuredCalls is how many stored calls a group member needs before its measured
// success rate and latency count (fewer say little: it stays unmeasured).
const minMeasuredCalls = 3

// measureMembers fills in g's members' success rates and mean latencies from their calls
// in the runs stored over the window before now (insights.Compute: a call answered with
// an error is a failure; calls refused or answered from the cache are not counted). A
// member with fewer than minMeasuredCalls calls stays unmeasured. reports, when not nil,
// caches a report per window for one agent build. now is the host's clock
// (Options.Clock), the one runs are stamped with.
func (h *Host) measureMembers(ctx context.Context, g *loop.ToolGroup, window time.Duration, reports map[time.Duration]*insights.Report) error {
	rep, ok := reports[window]
	if !ok {
		var err error
		if rep, err = insights.Compute(ctx, h.Store, h.now().Add(-window)); err != nil {
			return fmt.Errorf("tool_groups.%s.measure: read the stored runs: %w", g.Name, err)
		}
		if reports != nil {
			reports[window] = rep
		}
	}
	for i := range g.Members {
		m := &g.Members[i]
		for _, t := range rep.Tools {
			if t.Name == m.Tool && t.Calls >= minMeasuredCalls {
				m.Measured, m.SuccessRate, m.MeanMS = true, float64(t.Calls-t.Errors)/float64(t.Calls), t.MeanMS
			}
		}
	}
	return nil
}
