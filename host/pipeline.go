package host

import (
	"context"
	"errors"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// CallOptions say who asks for a tool call that no model made, and how to reach its
// user: the surface's side of Host.Call.
type CallOptions struct {
	// SessionID is the session the call is stored in and the sandbox keys instances by
	// (isolation "session"); `mcp serve` uses one per MCP session. "" starts a new one.
	SessionID string
	// Approver asks the surface's user when the policy asks (an MCP client's
	// elicitation); nil refuses every call that needs approval, with a clear error.
	Approver loop.Approver
	// Timeout bounds the call when tighter than the agent's tool_policy.timeout.
	Timeout time.Duration
	// OnEvent receives the call's events (plugin_log and progress included), in order.
	OnEvent func(loop.Event)
	// User is who the call is for (loop.RunInput.User); "" is anonymous.
	User string
}

// Call takes one call of a tool, named as the model sees it, through the agent's tool
// pipeline (loop.Agent.CallTool, rule L22): the argument check, the tool_args and
// tool_result guardrails, the permission plugins, require_approval and
// approval_default, the caps and the deadline are exactly a model's call's, and the call
// and its result are stored in opts.SessionID. Without a provider (`mcp serve` alone)
// the agent is built with a model that refuses to be called: the pipeline needs no
// model.
func (h *Host) Call(ctx context.Context, name string, args []byte, opts CallOptions) (loop.ToolResult, loop.RunResult) {
	a := h.pipelineAgent()
	if len(args) == 0 || string(args) == "null" { // MCP clients send null for no arguments
		args = []byte("{}")
	}
	return a.CallTool(ctx, loop.CallInput{SessionID: opts.SessionID, Call: loop.ToolCall{Name: name, Arguments: string(args)},
		Approver: opts.Approver, Timeout: opts.Timeout, User: opts.User}, opts.OnEvent)
}

// pipelineAgent is the agent whose policy a direct call takes: the live one, or the
// tool-only one a host without a provider built.
func (h *Host) pipelineAgent() *loop.Agent {
	if a := h.live.cur.Load(); a != nil {
		return a
	}
	return h.toolAgent.Load()
}

// buildToolAgent (re)builds the tool-only agent from the current tools: after a plugin
// changed its tool list, `mcp serve` offers and calls the new ones.
func (h *Host) buildToolAgent() error {
	a, err := h.agentFrom(h.Manifest.Agent, noModel{}, "", h.opts.Approver)
	if err == nil {
		h.toolAgent.Store(a)
	}
	return err
}

// errNoModel is what the tool-only agent's model answers: nothing on that path calls
// it, and if something ever did, it fails clearly instead of silently.
var errNoModel = errors.New("no provider is started: this command calls tools only")

type noModel struct{}

func (noModel) Stream(context.Context, loop.Request) (loop.Stream, error) {
	return nil, &loop.ModelError{Kind: loop.KindInvalidRequest, Message: errNoModel.Error()}
}
