package a2abridge

import (
	"encoding/json"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/agenthost/agenthost/loop"
)

// answerOf is the answer a reply to an input-required task gives each call waiting for
// approval. A data part, when the message has one, is the answer, in the shape of the
// HTTP resume payload (docs/approvals.md): {"approved": true|false, "reason": "…",
// "scope": "once|session|user", "for_rule": bool, "hours": N}; its scope is read by
// loop.GrantAnswer, and the grant is made where every answer's is, in the run's tool
// pipeline. Without one, the text decides: "approve" (or "yes") approves the call once,
// anything else rejects it with the text as the reason. A data part that does not say
// approved, or asks for hours out of range, rejects: ambiguity is a no.
func answerOf(m *a2a.Message) loop.Approval {
	if d, ok := dataOf(m); ok {
		var obj struct {
			Approved *bool  `json:"approved"`
			Reason   string `json:"reason"`
			loop.GrantAnswer
		}
		b, _ := json.Marshal(d)
		if err := json.Unmarshal(b, &obj); err != nil || obj.Approved == nil {
			return loop.Approval{Reason: `rejected over A2A: the answer's data part says no "approved": true|false`}
		}
		if !*obj.Approved {
			return loop.Approval{Reason: "rejected over A2A: " + obj.Reason}
		}
		a, err := obj.Widen(loop.Approval{Approved: true, Reason: obj.Reason})
		if err != nil {
			return loop.Approval{Reason: "rejected over A2A: " + err.Error()}
		}
		return a
	}
	text := textOf(m)
	if isYes(text) {
		return loop.Approval{Approved: true}
	}
	return loop.Approval{Reason: "rejected over A2A: " + text}
}

// dataOf is the message's first data part.
func dataOf(m *a2a.Message) (any, bool) {
	if m == nil {
		return nil, false
	}
	for _, p := range m.Parts {
		if p != nil && p.Data() != nil {
			return p.Data(), true
		}
	}
	return nil, false
}
