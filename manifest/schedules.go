package manifest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/schedule"
)

// ScheduleConfig is one [[schedules]] entry: an agent prompt or a workflow run as a
// named user, at each tick of a cron expression or an interval (schedule,
// docs/schedules.md).
type ScheduleConfig struct {
	Name   string   `toml:"name"`
	Cron   string   `toml:"cron"`  // five fields, a descriptor (@daily) and an optional CRON_TZ= prefix
	Every  Duration `toml:"every"` // or an interval, aligned to absolute time
	User   string   `toml:"user"`  // the user (name or id) each fire runs as; must exist when it fires
	Prompt string   `toml:"prompt"`
	Agent  string   `toml:"agent"` // the prompt's agent; "" the entry agent
	// RecentSessions appends the text of the user's N most recent sessions to the prompt
	// (at most MaxRecentSessions): a fire that consolidates them into memories.
	RecentSessions int `toml:"recent_sessions"`
	// Workflow runs a declared workflow with Inputs instead of a prompt.
	Workflow string         `toml:"workflow"`
	Inputs   map[string]any `toml:"inputs"`
	// Missed is what happens to ticks that fell due while no node ran: "skip" (the
	// default) or "run_once".
	Missed string `toml:"missed"`

	spec   schedule.Spec
	policy schedule.Policy
}

// Spec is the schedule's grid, parsed when the manifest was checked.
func (s ScheduleConfig) Spec() schedule.Spec { return s.spec }

// Policy is the schedule's missed-fire policy.
func (s ScheduleConfig) Policy() schedule.Policy { return s.policy }

// When is the schedule's grid as the manifest writes it.
func (s ScheduleConfig) When() string {
	if s.Cron != "" {
		return "cron " + s.Cron
	}
	return "every " + time.Duration(s.Every).String()
}

// InputsJSON is the workflow's inputs as JSON ("{}" for none).
func (s ScheduleConfig) InputsJSON() json.RawMessage {
	if len(s.Inputs) == 0 {
		return json.RawMessage("{}")
	}
	b, _ := json.Marshal(s.Inputs) // TOML values always encode
	return b
}

// MaxRecentSessions bounds a schedule's recent_sessions.
const MaxRecentSessions = 50

var scheduleName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,47}$`) })

// checkSchedules checks [[schedules]] after the agents and workflows they name.
func (m *Manifest) checkSchedules() error {
	seen := map[string]bool{}
	for i := range m.Schedules {
		s := &m.Schedules[i]
		key := fmt.Sprintf("schedules[%d]", i)
		switch {
		case !scheduleName().MatchString(s.Name):
			return m.ErrorAt(key+".name", "name %q: 1-48 lower-case letters, digits, _ or -, starting with a letter or digit", s.Name)
		case seen[s.Name]:
			return m.ErrorAt(key+".name", "duplicate schedule %q", s.Name)
		case strings.TrimSpace(s.User) == "":
			return m.ErrorAt(key, "user is required: the user each fire runs as")
		}
		seen[s.Name] = true
		spec, err := schedule.Parse(s.Cron, time.Duration(s.Every))
		if err != nil {
			return m.ErrorAt(key+"."+map[bool]string{true: "cron", false: "every"}[s.Cron != ""], "%v", err)
		}
		s.spec = spec
		if s.policy, err = schedule.ParsePolicy(s.Missed); err != nil {
			return m.ErrorAt(key+".missed", "%v", err)
		}
		if err := m.checkScheduleTarget(key, s); err != nil {
			return err
		}
	}
	return nil
}

func (m *Manifest) checkScheduleTarget(key string, s *ScheduleConfig) error {
	switch {
	case (s.Prompt == "") == (s.Workflow == ""):
		return m.ErrorAt(key, "give prompt or workflow (one of them)")
	case s.Workflow != "":
		if s.Agent != "" {
			return m.ErrorAt(key+".agent", "agent is for a prompt; a workflow names its agents in its steps")
		}
		if s.RecentSessions != 0 {
			return m.ErrorAt(key+".recent_sessions", "recent_sessions is for a prompt")
		}
		w, ok := m.Workflow(s.Workflow)
		if !ok {
			return m.ErrorAt(key+".workflow", "unknown workflow %q (workflows: %s)", s.Workflow, strings.Join(m.WorkflowNames(), ", "))
		}
		if err := w.CheckInputs(s.InputsJSON()); err != nil {
			return m.ErrorAt(key+".inputs", "%v", err)
		}
	case len(s.Inputs) > 0:
		return m.ErrorAt(key+".inputs", "inputs are for a workflow")
	case s.RecentSessions < 0 || s.RecentSessions > MaxRecentSessions:
		return m.ErrorAt(key+".recent_sessions", "recent_sessions %d: 0 to %d", s.RecentSessions, MaxRecentSessions)
	case s.Agent != "":
		if _, ok := m.AgentConfig(s.Agent); !ok {
			return m.ErrorAt(key+".agent", "unknown agent %q (agents: %s)", s.Agent, strings.Join(m.AgentNames(), ", "))
		}
	}
	return nil
}

// Schedule returns a declared schedule by name.
func (m *Manifest) Schedule(name string) (ScheduleConfig, bool) {
	for _, s := range m.Schedules {
		if s.Name == name {
			return s, true
		}
	}
	return ScheduleConfig{}, false
}
