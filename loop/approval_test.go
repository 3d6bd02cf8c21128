package loop

import (
	"context"
	"testing"
)

// approvalRun runs one call of calc and one of words under a policy and returns the
// approver's calls and the two tool messages.
func approvalRun(t *testing.T, p ToolPolicy, perm PermissionFunc) ([]string, []string) {
	t.Helper()
	m := script(turn{calls: []ToolCall{call("c1", "calc", `{"expression":"1+1"}`), call("c2", "words", `{"text":"a b"}`)}},
		turn{text: "done"})
	ap := &answerApprover{ok: false, why: "no"}
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool(), wordsTool()), ToolPolicy: p, Approver: ap, Permission: perm})
	runCollect(t, a, userIn("s", "go"))
	var asked []string
	for _, c := range ap.calls {
		asked = append(asked, c.Name)
	}
	h := history(t, a, "s")
	return asked, h[2:4]
}

func TestL6_RequireApprovalStarAsksForEveryTool(t *testing.T) {
	asked, res := approvalRun(t, ToolPolicy{RequireApproval: []string{"*"}}, nil)
	equal(t, "asked", asked, []string{"calc", "words"})
	equal(t, "results", res, []string{"tool[c1]:Error: tool call rejected: no", "tool[c2]:Error: tool call rejected: no"})
}

func TestL6_ApprovalDefaultAppliesToUnlistedTools(t *testing.T) {
	asked, res := approvalRun(t, ToolPolicy{RequireApproval: []string{"calc"}, ApprovalDefault: PermitDeny}, nil)
	equal(t, "asked", asked, []string{"calc"})
	equal(t, "results", res, []string{"tool[c1]:Error: tool call rejected: no",
		"tool[c2]:Error: permission denied for tool 'words': approval_default is deny"})

	asked, _ = approvalRun(t, ToolPolicy{ApprovalDefault: PermitAsk}, nil)
	equal(t, "asked", asked, []string{"calc", "words"})

	asked, res = approvalRun(t, ToolPolicy{}, nil)
	equal(t, "asked (allow)", asked, nil)
	equal(t, "results (allow)", res, []string{"tool[c1]:2", "tool[c2]:2"})
}

func TestL6_PermissionHookAnswersAllowDenyAskPerCall(t *testing.T) {
	perm := func(_ context.Context, c ToolCall) PermissionDecision {
		if c.Name == "calc" {
			return PermissionDecision{Verdict: PermitAsk}
		}
		return PermissionDecision{Verdict: PermitDeny}
	}
	asked, res := approvalRun(t, ToolPolicy{}, perm)
	equal(t, "asked", asked, []string{"calc"})
	equal(t, "results", res, []string{"tool[c1]:Error: tool call rejected: no",
		"tool[c2]:Error: permission denied for tool 'words': denied by the permission hook"})

	// allow does not bypass the operator's require_approval.
	allow := func(context.Context, ToolCall) PermissionDecision { return PermissionDecision{Verdict: PermitAllow} }
	asked, _ = approvalRun(t, ToolPolicy{RequireApproval: []string{"words"}}, allow)
	equal(t, "asked (allow)", asked, []string{"words"})
}

func TestL6_ApprovalDefaultMustBeAKnownWord(t *testing.T) {
	if _, err := New(Config{Model: script(), ToolPolicy: ToolPolicy{ApprovalDefault: "maybe"}}); err == nil {
		t.Fatal("want an error")
	}
}

// A call a decision stopped says so on its tool_result (refused: "rejected" by the
// approver, "denied" by the permission hook), so reports tell it from the tool's own errors; a
// call that ran, or that failed its argument check, has none.
func TestL6_RefusedCallsAreMarkedOnTheirToolResult(t *testing.T) {
	m := script(turn{calls: []ToolCall{call("c1", "calc", `{"expression":"1+1"}`), call("c2", "words", `{"text":"a b"}`),
		call("c3", "calc", `{"nope":1}`)}}, turn{calls: []ToolCall{call("c4", "words", `{"text":"a b"}`)}}, turn{text: "done"})
	ap := &answerApprover{ok: false, why: "no"}
	policy := ToolPolicy{RequireApproval: []string{"calc"}}
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool(), wordsTool()), ToolPolicy: policy, Approver: ap,
		Permission: func(_ context.Context, c ToolCall) PermissionDecision {
			if c.ID == "c2" {
				return PermissionDecision{Verdict: PermitDeny, Reason: "not this one"}
			}
			return PermissionDecision{}
		}})
	_, evs := runCollect(t, a, userIn("s", "go"))
	var got []string
	for _, r := range eventsOf[ToolResultData](evs) {
		got = append(got, r.ID+":"+r.Refused)
	}
	equal(t, "refused", got, []string{"c1:" + RefusedRejected, "c2:" + RefusedDenied, "c3:", "c4:"})
}
