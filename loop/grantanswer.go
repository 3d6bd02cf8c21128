package loop

import (
	"fmt"
	"math"
	"time"
)

// GrantAnswer is the scope of an approver's yes as every surface carries it
// (docs/approvals.md): the HTTP resume payload, an A2A answer's data part, an MCP
// elicitation's form, the terminal's "s" and "h N". Each reads it into an Approval
// with Widen, and the one place that turns a scope into a grant is the run's
// takeAnswer (approvals.go): an unknown scope is a no there, never a wider yes.
type GrantAnswer struct {
	Scope   string  `json:"scope,omitempty"`    // ScopeOnce ("" too), ScopeSession, ScopeUser
	ForRule bool    `json:"for_rule,omitempty"` // the grant covers the rule that asked, not the tool
	Hours   float64 `json:"hours,omitempty"`    // how long (ScopeUser needs it; ScopeSession: default approval_ttl)
}

// MaxGrantHours bounds GrantAnswer.Hours: a year.
const MaxGrantHours = 24 * 366

// Widen is a with g's scope; hours out of range (or not a number) is an error, and the
// surface refuses the answer.
func (g GrantAnswer) Widen(a Approval) (Approval, error) {
	if math.IsNaN(g.Hours) || g.Hours < 0 || g.Hours > MaxGrantHours {
		return a, fmt.Errorf("hours must be between 0 and %d", MaxGrantHours)
	}
	a.Scope, a.ForRule, a.For = g.Scope, g.ForRule, time.Duration(g.Hours*float64(time.Hour))
	return a, nil
}
