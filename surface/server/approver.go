package server

import (
	"context"

	"github.com/agenthost/agenthost/loop"
)

// InterruptApprover is the Approver of a served agent: it never waits for a human on
// the server. Every call that needs approval (agent.tool_policy.require_approval)
// interrupts the run (loop.ErrApprovalPending); the run ends with an AG-UI interrupt
// outcome, and the client answers with a new run carrying `resume`.
type InterruptApprover struct{}

// Approve implements loop.Approver.
func (InterruptApprover) Approve(context.Context, loop.ToolCall) (loop.Approval, error) {
	return loop.Approval{}, loop.ErrApprovalPending
}
