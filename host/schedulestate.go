package host

import (
	"context"
	"time"

	"github.com/agenthost/agenthost/schedule"
)

// scheduleKV is the namespace of the store's key-value pairs where each schedule's last
// handled tick is kept (schedule.State): in the store, so every node and every restart
// reads the same one.
const scheduleKV = "agenthost.schedules"

// ScheduleState is the schedules' last handled ticks, kept in the store.
func (h *Host) ScheduleState() schedule.State { return scheduleState{h} }

type scheduleState struct{ h *Host }

func (s scheduleState) Last(ctx context.Context, name string) (time.Time, bool, error) {
	b, ok, err := s.h.Store.KVGet(ctx, scheduleKV, name)
	if err != nil || !ok {
		return time.Time{}, false, err
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return time.Time{}, false, nil // unreadable: as if never run
	}
	return t, true, nil
}

// SetLast records tick unless a later one is recorded (another node went further).
func (s scheduleState) SetLast(ctx context.Context, name string, tick time.Time) error {
	if last, ok, err := s.Last(ctx, name); err == nil && ok && !tick.After(last) {
		return nil
	}
	return s.h.Store.KVSet(ctx, scheduleKV, name, []byte(tick.UTC().Format(time.RFC3339Nano)))
}

// ScheduleInfo is a declared schedule as listed (`schedules list`, GET /v1/schedules).
type ScheduleInfo struct {
	Name     string     `json:"name"`
	When     string     `json:"when"`
	User     string     `json:"user"`
	Prompt   string     `json:"prompt,omitempty"`
	Agent    string     `json:"agent,omitempty"`
	Workflow string     `json:"workflow,omitempty"`
	Missed   string     `json:"missed"`
	Next     *time.Time `json:"next_fire,omitempty"`
	Last     *time.Time `json:"last_tick,omitempty"` // the latest tick handled (fired or skipped)
}

// Schedules lists the declared schedules with their next fire after now and the last
// tick handled.
func (h *Host) Schedules(ctx context.Context, now time.Time) ([]ScheduleInfo, error) {
	out := []ScheduleInfo{}
	st := h.ScheduleState()
	for _, s := range h.Manifest.Schedules {
		i := ScheduleInfo{Name: s.Name, When: s.When(), User: s.User, Prompt: s.Prompt, Agent: s.Agent, Workflow: s.Workflow, Missed: string(s.Policy())}
		last, ok, err := st.Last(ctx, s.Name)
		if err != nil {
			return nil, err
		}
		from := now
		if ok {
			i.Last = &last
			if last.After(now) {
				from = last
			}
		}
		if next := s.Spec().Next(from); !next.IsZero() {
			next = next.UTC()
			i.Next = &next
		}
		out = append(out, i)
	}
	return out, nil
}
