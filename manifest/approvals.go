package manifest

import (
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/approval"
)

// checkApprovals compiles the [[approvals]] rules (approval), so a rule that does not
// compile fails at load with its file, line and key; and checks each agent's
// approval_ttl.
func (m *Manifest) checkApprovals() error {
	if _, err := approval.Compile(m.Approvals); err != nil {
		var e *approval.Error
		if errors.As(err, &e) {
			return m.ErrorAt(fmt.Sprintf("approvals.%d.%s", e.Index, e.Key), "%s", e.Msg)
		}
		return m.ErrorAt("approvals", "%v", err)
	}
	if m.Agent.ToolPolicy.ApprovalTTL < 0 {
		return m.ErrorAt("agent.tool_policy.approval_ttl", "must not be negative")
	}
	for name, a := range m.Agents {
		if a.ToolPolicy.ApprovalTTL < 0 {
			return m.ErrorAt("agents."+name+".tool_policy.approval_ttl", "must not be negative")
		}
	}
	return nil
}
