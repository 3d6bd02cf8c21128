package loop

import (
	"context"
	"strings"
	"unicode/utf8"
)

// Plugins report what they do while they run: log lines and progress (docs/loop.md#events,
// plugin_log and progress). Such a report comes from a tool's goroutine, possibly several
// at once, so it goes through the journal's lock; and it comes from code the host does not
// trust, so it is bounded: each message is cut at maxNoticeBytes, and a run keeps at most
// maxNotices of them (one plugin_log from "agenthost" says when the rest were dropped).
const (
	maxNotices     = 1000
	maxNoticeBytes = 8 << 10
)

// PluginLogData is a plugin's log line. Level is an MCP logging level (debug, info,
// notice, warning, error, critical, alert, emergency); anything else is recorded as info.
type PluginLogData struct {
	Plugin  string `json:"plugin"`
	Level   string `json:"level"`
	Message string `json:"message"`
}

// ProgressData is a plugin's progress report; Total 0 means unknown.
type ProgressData struct {
	Plugin   string  `json:"plugin"`
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// CircuitData is a provider's circuit breaker changing state: open (calls go to the
// fallback for a cool-down), half_open (one probe call may try it) or closed.
type CircuitData struct {
	Provider string `json:"provider"`
	State    string `json:"state"`
	Reason   string `json:"reason"`
}

// LogLevels are the plugin_log levels, least severe first.
var LogLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// LogLevelRank returns the index of level in LogLevels, or -1.
func LogLevelRank(level string) int {
	for i, l := range LogLevels {
		if l == level {
			return i
		}
	}
	return -1
}

type noticeKey struct{}

// Notify records a report as an event of the run that ctx belongs to: the context of a
// tool call, a hook, a guardrail, a context strategy or a model call. Plugins report a
// PluginLogData or a ProgressData; a model that falls back between providers reports an
// ErrorData (the fallback and why) and a CircuitData. It reports false when ctx belongs
// to no run (or the run has ended), so the caller can show the report elsewhere, and for
// any other type of data.
func Notify(ctx context.Context, data any) bool {
	j, _ := ctx.Value(noticeKey{}).(*journal)
	if j == nil {
		return false
	}
	switch d := data.(type) {
	case PluginLogData:
		if LogLevelRank(d.Level) < 0 {
			d.Level = "info"
		}
		d.Message = clip(d.Message)
		return j.notice(EventPluginLog, &d)
	case ProgressData:
		d.Message = clip(d.Message)
		return j.notice(EventProgress, &d)
	case ErrorData:
		d.Message = clip(d.Message)
		return j.notice(EventError, &d)
	case CircuitData:
		d.Reason = clip(d.Reason)
		return j.notice(EventCircuit, &d)
	}
	return false
}

// forward delivers an event of a nested run in this run's stream, under the journal's
// lock so it never interleaves with the run's own emits. It takes no seq and is not
// stored here: the nested run's session has it.
func (j *journal) forward(e Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.ended || j.holding || j.emitFn == nil {
		return
	}
	j.emitFn(e)
}

// nestedEmit is the emit of a run nested in r: its events reach r's stream with their
// path, name being the path element of the nested run.
func (r *run) nestedEmit(name string) func(Event) {
	return func(e Event) {
		if e.Path == "" {
			e.Path = name
		}
		e.Path = r.cfg.Name + "/" + e.Path
		r.journal.forward(e)
	}
}

// notice emits a plugin's report under the journal's lock, within the run's bound.
func (j *journal) notice(t EventType, data any) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.ended {
		return false
	}
	j.notices++
	switch {
	case j.notices <= maxNotices:
		j.emitLocked(t, data, j.read())
	case j.notices == maxNotices+1:
		j.emitLocked(EventPluginLog, &PluginLogData{Plugin: "agenthost", Level: "warning",
			Message: "this run reached its limit of plugin reports; further ones are dropped"}, j.read())
	}
	return true
}

// clip cuts s to maxNoticeBytes on a rune boundary.
func clip(s string) string {
	if len(s) <= maxNoticeBytes {
		return s
	}
	cut := maxNoticeBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.ToValidUTF8(s[:cut], "\uFFFD") + "… (cut)"
}
