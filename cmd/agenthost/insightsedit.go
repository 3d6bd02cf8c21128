package main

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/insights"
	"github.com/agenthost/agenthost/manifest"
)

// manifestReplace is how an applied suggestion replaces agent.toml: validated, atomic,
// refused when the file changed (manifest.ReplaceFile).
var manifestReplace = manifest.ReplaceFile

// edit is a suggestion's change: the manifest's new text and what changed, in words.
type edit struct {
	data []byte
	what string
}

// toolName is a tool's name as a manifest table's bare key may hold it.
var toolName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`) })

// editFor turns a suggestion, completed by the user's flags, into its edit of data (the
// manifest's text, which h.Manifest was loaded from).
func editFor(s insights.Suggestion, h *host.Host, data []byte, f applyFlags) (edit, error) {
	var e edit
	var err error
	switch s.Kind {
	case "fallback":
		e, err = fallbackEdit(s, h.Manifest, data, f)
	case "cap":
		e, err = capEdit(s, h.Manifest, data, f.value)
	case "prompt":
		if strings.TrimSpace(f.text) == "" {
			return e, usage(errors.New(`a prompt suggestion takes --text "what the agent should do": the words are yours`))
		}
		if !utf8.ValidString(f.text) {
			return e, usage(errors.New("--text is not valid UTF-8"))
		}
		e.what = "[agent] system_prompt += " + strconv.Quote(f.text)
		e.data, err = manifest.AppendToString(data, "agent", "system_prompt", f.text)
	default:
		return e, usage(fmt.Errorf("a %s suggestion is a review for you to make: it has nothing to apply", s.Kind))
	}
	if errors.Is(err, manifest.ErrNotEditable) {
		err = failed(fmt.Errorf("%s: %w", e.what, err))
	}
	return e, err
}

func fallbackEdit(s insights.Suggestion, m *manifest.Manifest, data []byte, f applyFlags) (edit, error) {
	var e edit
	var err error
	if !toolName().MatchString(s.Target) {
		return e, failed(fmt.Errorf("tool %q cannot be named in a table key: change agent.toml by hand", s.Target))
	}
	switch {
	case f.disable:
		e.what = fmt.Sprintf("[[approvals]] deny %s (first rule)", s.Target)
		e.data, err = manifest.PrependArrayTable(data, "approvals", [][2]any{
			{"name", "insights-disable-" + s.Target}, {"when", fmt.Sprintf("tool == %q", s.Target)}, {"decision", "deny"},
			{"reason", fmt.Sprintf("%s is turned off: it failed too often (insights apply %s)", s.Target, s.ID)}})
	case f.fallback != "":
		if !toolName().MatchString(f.fallback) || f.fallback == s.Target {
			return e, usage(fmt.Errorf("--fallback %q: want another tool's name", f.fallback))
		}
		if t, ok := m.Tools[s.Target]; ok && len(t.Fallback) > 0 {
			return e, failed(fmt.Errorf("[tools.%s] already has fallback %v: change it by hand", s.Target, t.Fallback.Names()))
		}
		e.what = fmt.Sprintf("[tools.%s] fallback = [%q]", s.Target, f.fallback)
		e.data, err = manifest.SetKey(data, "tools."+s.Target, "fallback", []string{f.fallback})
	default:
		return e, usage(errors.New("a fallback suggestion takes --fallback TOOL (the tool that stands in) or --disable (refuse its calls)"))
	}
	return e, err
}

// capEdit raises a limit of the entry agent: to --value, or to twice its value now (its
// default when unset).
func capEdit(s insights.Suggestion, m *manifest.Manifest, data []byte, value string) (edit, error) {
	a := m.Agent
	cur := map[string]int{"agent.max_iterations": a.MaxIterations, "agent.max_tool_rounds": a.MaxToolRounds,
		"agent.max_handoffs": a.MaxHandoffs, "agent.plan.max_steps": a.Plan.MaxSteps, "agent.plan.max_replans": a.Plan.MaxReplans}
	defaults := map[string]int{"agent.max_iterations": 50, "agent.max_handoffs": 5, "agent.plan.max_steps": 8, "agent.plan.max_replans": 2}
	i := strings.LastIndexByte(s.Key, '.')
	if i < 0 {
		return edit{}, usage(fmt.Errorf("%s is not one key: change it by hand", s.Target))
	}
	table, key := s.Key[:i], s.Key[i+1:]
	var v any
	var shown string
	if s.Key == "agent.max_run_duration" {
		now := time.Duration(a.MaxRunDuration)
		next := 2 * now
		if value != "" {
			d, err := time.ParseDuration(value)
			if err != nil {
				return edit{}, usage(fmt.Errorf("--value: %w", err))
			}
			next = d
		}
		if next <= now {
			return edit{}, usage(fmt.Errorf("--value %s does not raise %s (%s now)", next, s.Key, now))
		}
		v = durationText(next)
		shown = strconv.Quote(v.(string))
	} else {
		now := cur[s.Key]
		if now == 0 {
			now = defaults[s.Key]
		}
		next := 2 * now
		if value != "" {
			n, err := strconv.Atoi(value)
			if err != nil {
				return edit{}, usage(fmt.Errorf("--value %q: want a whole number", value))
			}
			next = n
		}
		if next <= now {
			return edit{}, usage(fmt.Errorf("--value %d does not raise %s (%d now)", next, s.Key, now))
		}
		v, shown = next, strconv.Itoa(next)
	}
	out, err := manifest.SetKey(data, table, key, v)
	return edit{data: out, what: fmt.Sprintf("[%s] %s = %s", table, key, shown)}, err
}

// durationText writes d as people do: "2h", "90m", else Go's form ("1m30s").
func durationText(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}
