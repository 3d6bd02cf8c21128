package a2abridge

import (
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/agenthost/agenthost/loop"
)

// A reply's data part answers with a scope, as the HTTP resume payload does; without
// one the text decides (once). A data part that does not say approved, says it with
// another type, or asks for hours out of range is a no, whatever the text says.
func TestAnA2AAnswerCarriesItsScopeInADataPart(t *testing.T) {
	msg := func(parts ...*a2a.Part) *a2a.Message { return &a2a.Message{Parts: parts} }
	for _, c := range []struct {
		name  string
		m     *a2a.Message
		ok    bool
		scope string
		dur   time.Duration
		rule  bool
	}{
		{"text yes", msg(a2a.NewTextPart("approve")), true, "", 0, false},
		{"text no", msg(a2a.NewTextPart("not now")), false, "", 0, false},
		{"session", msg(a2a.NewDataPart(map[string]any{"approved": true, "scope": "session"})), true, loop.ScopeSession, 0, false},
		{"user 8h for the rule", msg(a2a.NewTextPart("no"), a2a.NewDataPart(map[string]any{"approved": true, "scope": "user", "hours": 8, "for_rule": true})), true, loop.ScopeUser, 8 * time.Hour, true},
		{"data no", msg(a2a.NewTextPart("approve"), a2a.NewDataPart(map[string]any{"approved": false, "reason": "too big"})), false, "", 0, false},
		{"no approved", msg(a2a.NewTextPart("approve"), a2a.NewDataPart(map[string]any{"scope": "session"})), false, "", 0, false},
		{"approved as text", msg(a2a.NewDataPart(map[string]any{"approved": "true"})), false, "", 0, false},
		{"hours past a year", msg(a2a.NewDataPart(map[string]any{"approved": true, "scope": "user", "hours": 1e9})), false, "", 0, false},
		{"negative hours", msg(a2a.NewDataPart(map[string]any{"approved": true, "scope": "user", "hours": -1})), false, "", 0, false},
	} {
		a := answerOf(c.m)
		if a.Approved != c.ok || a.Scope != c.scope || a.For != c.dur || a.ForRule != c.rule {
			t.Errorf("%s: %+v", c.name, a)
		}
	}
}
