package mcpserver

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/loop"
)

// Only an accepted form whose approve is the boolean true approves a call: a client's
// answer is input like any other, and a string, a missing field or another action is
// a rejection, never a yes.
func TestOnlyAnAcceptedTrueApproves(t *testing.T) {
	for _, c := range []struct {
		action  string
		content map[string]any
		ok      bool
	}{
		{"accept", map[string]any{"approve": true}, true},
		{"accept", map[string]any{"approve": "true"}, false},
		{"accept", map[string]any{"approve": 1}, false},
		{"accept", nil, false},
		{"decline", map[string]any{"approve": true}, false},
		{"cancel", map[string]any{"approve": true}, false},
		{"", map[string]any{"approve": true}, false},
	} {
		a, err := answered{&mcp.ElicitResult{Action: c.action, Content: c.content}}.Approve(context.Background(), loop.ToolCall{Name: "t"})
		if err != nil || a.Approved != c.ok {
			t.Errorf("%q %v: approved %v (%v), want %v", c.action, c.content, a.Approved, err, c.ok)
		}
	}
}

// A yes's scope and hours come from the form; of the wrong type or out of range, the
// answer is a no.
func TestAnElicitedYesCarriesItsScope(t *testing.T) {
	for _, c := range []struct {
		content map[string]any
		ok      bool
		scope   string
		dur     time.Duration
	}{
		{map[string]any{"approve": true, "scope": "session"}, true, loop.ScopeSession, 0},
		{map[string]any{"approve": true, "scope": "user", "hours": 8}, true, loop.ScopeUser, 8 * time.Hour},
		{map[string]any{"approve": true, "scope": 3}, false, "", 0},
		{map[string]any{"approve": true, "scope": "user", "hours": "8"}, false, "", 0},
		{map[string]any{"approve": true, "scope": "user", "hours": 1e9}, false, "", 0},
		{map[string]any{"approve": false, "scope": "session"}, false, "", 0},
	} {
		a, err := answered{&mcp.ElicitResult{Action: "accept", Content: c.content}}.Approve(context.Background(), loop.ToolCall{Name: "t"})
		if err != nil || a.Approved != c.ok || a.Scope != c.scope || a.For != c.dur {
			t.Errorf("%v: %+v (%v)", c.content, a, err)
		}
	}
}
