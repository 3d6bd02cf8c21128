package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/loop"
)

// sessions maps MCP sessions to the host's: each MCP session (an Mcp-Session-Id over
// HTTP; the one connection over stdio) is one session of the store, "mcp-ID", so its
// calls are kept together, and the sandbox gives it instances no other MCP session
// touches (isolation "session"). Calls of one MCP session run one at a time, as a
// session's runs do.
type sessions struct {
	mu    sync.Mutex
	stdio string // the key of a session without an id (stdio): one per process
	locks map[string]*sessionLock
}

type sessionLock struct {
	mu   sync.Mutex
	refs int
}

func newSessions() *sessions {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &sessions{stdio: "mcp-stdio-" + hex.EncodeToString(b[:]), locks: map[string]*sessionLock{}}
}

// key is the store session of an MCP session.
func (s *sessions) key(ss *mcp.ServerSession) string {
	if ss == nil || ss.ID() == "" {
		return s.stdio
	}
	return "mcp-" + ss.ID()
}

// lock waits for the session's earlier calls and returns the unlock. The entry goes
// when nobody holds or waits for it, so ended sessions leave nothing behind.
func (s *sessions) lock(key string) func() {
	s.mu.Lock()
	l := s.locks[key]
	if l == nil {
		l = &sessionLock{}
		s.locks[key] = l
	}
	l.refs++
	s.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		s.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(s.locks, key)
		}
		s.mu.Unlock()
	}
}

// canElicit reports whether the client said it can ask its user (elicitation, form).
func canElicit(ss *mcp.ServerSession) bool {
	if ss == nil || ss.InitializeParams() == nil || ss.InitializeParams().Capabilities == nil {
		return false
	}
	return ss.InitializeParams().Capabilities.Elicitation != nil
}

// approvalInput names the elicitation that asks a user to approve a call.
const approvalInput = "approval"

// approverFor is how a call asks its user (loop.Approver): with the answer, when the
// client calls again with it (InputResponses); by asking (elicitation, returned to the
// client as an input request), when the client can show a form; else not at all.
func approverFor(req *mcp.CallToolRequest) (loop.Approver, *inputApprover) {
	if r, ok := req.Params.InputResponses[approvalInput].(*mcp.ElicitResult); ok {
		return answered{r}, nil
	}
	if canElicit(req.Session) {
		a := &inputApprover{}
		return a, a
	}
	return noElicitation{}, nil
}

// approvalSchema is the form a client's user answers: approve, and the scope of a yes
// (docs/approvals.md): this call once, the tool for this MCP session, or for the user
// for some hours.
var approvalSchema = map[string]any{"type": "object", "required": []string{"approve"},
	"properties": map[string]any{
		"approve": map[string]any{"type": "boolean", "title": "Allow this call"},
		"scope": map[string]any{"type": "string", "title": "Allow for", "enum": []string{loop.ScopeOnce, loop.ScopeSession, loop.ScopeUser},
			"description": "once: this call; session: this tool for the rest of this session; user: this tool for you, for the hours below",
			"default":     loop.ScopeOnce},
		"hours": map[string]any{"type": "number", "title": "Hours (scope user)", "minimum": 0, "maximum": loop.MaxGrantHours},
	}}

// inputApprover interrupts the call (loop.ErrApprovalPending: the run ends
// interrupted/approval_required, stored) and keeps the question for the client.
type inputApprover struct{ params *mcp.ElicitParams }

func (a *inputApprover) Approve(_ context.Context, c loop.ToolCall) (loop.Approval, error) {
	a.params = &mcp.ElicitParams{Mode: "form", RequestedSchema: approvalSchema,
		Message: fmt.Sprintf("The tool %s needs your approval to run with the arguments %s", c.Name, c.Arguments)}
	return loop.Approval{}, loop.ErrApprovalPending
}

// answered is the user's answer to that question: only an accepted yes approves, with
// the scope the form gave (read by loop.GrantAnswer, the grant made in the loop's
// pipeline as for every answer); a scope or hours of the wrong type is a no.
type answered struct{ r *mcp.ElicitResult }

func (a answered) Approve(context.Context, loop.ToolCall) (loop.Approval, error) {
	if ok, _ := a.r.Content["approve"].(bool); !ok || a.r.Action != "accept" {
		return loop.Approval{Reason: "the MCP client's user did not approve (" + a.r.Action + ")"}, nil
	}
	var g loop.GrantAnswer
	b, _ := json.Marshal(map[string]any{"scope": a.r.Content["scope"], "hours": a.r.Content["hours"]})
	if err := json.Unmarshal(b, &g); err != nil {
		return loop.Approval{Reason: "the MCP client's answer has a scope or hours that are not a string and a number"}, nil
	}
	ap, err := g.Widen(loop.Approval{Approved: true})
	if err != nil {
		return loop.Approval{Reason: "the MCP client's answer: " + err.Error()}, nil
	}
	return ap, nil
}

// noElicitation refuses every call that needs approval, saying why: the client did not
// declare elicitation, so nobody can be asked.
type noElicitation struct{}

func (noElicitation) Approve(context.Context, loop.ToolCall) (loop.Approval, error) {
	return loop.Approval{Reason: "approval required, and this MCP client cannot ask its user (it does not support elicitation)"}, nil
}
