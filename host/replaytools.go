package host

import (
	"context"

	"github.com/agenthost/agenthost/loop"
)

// replayedTool is a manifest tool whose calls Options.ReplayTool answers: it is offered
// and admitted as the tool is (its spec, schema, guardrails, approvals: the loop's one
// pipeline), but the tool itself never runs.
type replayedTool struct {
	ownedTool
	answer func(loop.ToolCall) loop.ToolResult
}

func (t replayedTool) Call(_ context.Context, c loop.ToolCall) (loop.ToolResult, error) {
	return t.answer(c), nil
}

// replayed wraps every tool in replayedTool when Options.ReplayTool is set.
func (h *Host) replayed(tools []loop.Tool) []loop.Tool {
	if h.opts.ReplayTool == nil {
		return tools
	}
	out := make([]loop.Tool, len(tools))
	for i, t := range tools {
		out[i] = replayedTool{ownedTool: t.(ownedTool), answer: h.opts.ReplayTool}
	}
	return out
}
