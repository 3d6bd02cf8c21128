package mcpserver

import (
	"context"
	"testing"

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
