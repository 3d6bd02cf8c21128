package loop

import (
	"context"
	"time"
)

// CallInput is one tool call asked for by something that is not a model: `mcp serve`
// calling a tool for an MCP client, `plugins call` for a developer.
type CallInput struct {
	SessionID string   // "" starts a new session
	RunID     string   // "" gets a generated one
	Call      ToolCall // the tool by the name the model knows it; an empty ID gets a generated one
	// Approver answers the call if it needs approval (L6), instead of Config.Approver: the
	// surface's way of asking its user (an MCP client's elicitation, a terminal). A
	// surface that cannot ask anyone leaves both nil and the call is refused.
	Approver Approver
	// Timeout bounds the call when it is tighter than the agent's ToolPolicy.Timeout.
	Timeout time.Duration
	TraceID string
	User    string // the caller's user (RunInput.User)
}

// DirectCall takes one call through the tool pipeline (rule L22), exactly as a call in a
// model's answer goes: the argument check, guardrails, the permission plugin, the
// approval policy, the caps, the deadline, the result guardrails. It is a run of its
// own on in.SessionID, so the call is stored before it runs and its result after it
// (L21), the session's lease keeps a second writer out, and the sandbox keys plugin
// instances by the session (isolation "session"). The session keeps events only
// (run_started, tool_call, tool_result, run_finished): there is no conversation, so no
// message is stored.
//
// The run ends completed/direct_call whatever the tool answered; the result says how
// the call went. A run that could not make the call (a store failure, a busy session,
// an abort) returns a failed or aborted RunResult and an error result naming why.
func (a *Agent) DirectCall(ctx context.Context, in CallInput, emit func(Event)) (ToolResult, RunResult) {
	call := in.Call
	if call.ID == "" {
		call.ID = a.newID("call_")
	}
	var out ToolResult
	rin := RunInput{SessionID: in.SessionID, RunID: in.RunID, TraceID: in.TraceID, User: in.User, direct: &call,
		approver: in.Approver, directTimeout: in.Timeout, directResult: &out}
	res, err := a.RunWith(ctx, rin, emit)
	if res.Status != StatusCompleted {
		msg := "Error: the call was not made: the run ended " + string(res.Status) + "/" + string(res.Reason)
		if err != nil {
			msg += ": " + err.Error()
		}
		return ErrorResult(msg), res
	}
	return out, res
}

// directCall is the body of a run DirectCall started: one call, then the end.
func (r *run) directCall(head SessionHead) RunResult {
	r.journal.seq = r.transcript.project(head)
	res, err := r.callOne(*r.in.direct, r.in.directTimeout)
	if err != nil {
		return r.failOrAbort(err)
	}
	*r.in.directResult = res
	return r.end(StatusCompleted, ReasonDirectCall, nil, res.Structured, nil)
}
