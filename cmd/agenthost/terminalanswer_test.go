package main

import (
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// A terminal answer is a yes only when it says which: y, s, or h with a number of hours
// in range; any other h (no number, zero, negative, not a number, past a year) is a no.
func TestATerminalAnswerIsAYesOnlyWhenItSaysWhich(t *testing.T) {
	for _, c := range []struct {
		line  string
		ok    bool
		scope string
		dur   time.Duration
	}{
		{"y", true, "", 0}, {"s", true, loop.ScopeSession, 0}, {"h8", true, loop.ScopeUser, 8 * time.Hour},
		{"h 0.5", true, loop.ScopeUser, 30 * time.Minute}, {"h", false, "", 0}, {"h0", false, "", 0},
		{"h -3", false, "", 0}, {"hnan", false, "", 0}, {"h inf", false, "", 0}, {"h 9000", false, "", 0},
		{"hello", false, "", 0}, {"n", false, "", 0}, {"", false, "", 0},
	} {
		a := terminalAnswer(c.line)
		if a.Approved != c.ok || a.Scope != c.scope || a.For != c.dur {
			t.Errorf("%q: %+v, want approved %v scope %q for %s", c.line, a, c.ok, c.scope, c.dur)
		}
	}
}
