package host

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/loop"
)

// Bounds of what a fire with recent_sessions hands the model: each session's text and
// the whole, so a user with long sessions cannot make one fire's prompt unbounded.
const (
	recentPerSession = 4 << 10
	recentTotal      = 32 << 10
)

// recentSessions is the text of the user's n most recently updated sessions (the ones
// they own; schedules' own sessions left out), their user and assistant messages, for a
// fire that consolidates them (docs/schedules.md, "Background memory"). What the model
// reads is what the store gives back: opened with the store's keys, as any load.
func (h *Host) recentSessions(ctx context.Context, p access.Principal, n int) (string, error) {
	as, ok := h.Access()
	if !ok {
		return "", fmt.Errorf("the %s store keeps no owners", h.Manifest.Store.Kind)
	}
	all, err := h.Sessions(ctx)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	taken := 0
	for _, s := range all {
		if taken == n || b.Len() >= recentTotal {
			break
		}
		if strings.HasPrefix(s.ID, "sched-") {
			continue
		}
		owner, err := as.Owner(ctx, s.ID)
		if err != nil {
			return "", err
		}
		if owner != p.ID {
			continue
		}
		entries, err := h.Store.Load(ctx, s.ID)
		if err != nil {
			return "", err
		}
		taken++
		fmt.Fprintf(&b, "\n<session id=%q updated=%q>\n", s.ID, s.Updated.UTC().Format("2006-01-02T15:04:05Z"))
		b.WriteString(clipText(sessionText(entries), min(recentPerSession, recentTotal-b.Len())))
		b.WriteString("</session>\n")
	}
	if taken == 0 {
		return "\n(no recent sessions)\n", nil
	}
	return b.String(), nil
}

// sessionText is a session's user and assistant messages, one line each.
func sessionText(entries []loop.Entry) string {
	var b strings.Builder
	for _, e := range entries {
		if e.Kind != loop.EntryMessage || e.Message == nil {
			continue
		}
		if r := e.Message.Role; r == loop.RoleUser || r == loop.RoleAssistant {
			if t := strings.TrimSpace(e.Message.Text()); t != "" {
				fmt.Fprintf(&b, "%s: %s\n", r, t)
			}
		}
	}
	return b.String()
}

// clipText cuts s to at most n bytes on a rune boundary, saying so.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return "…\n"
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…\n"
}
