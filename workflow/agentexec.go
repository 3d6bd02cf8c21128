package workflow

import (
	"context"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// AgentExecutor is the Executor of one loop.Agent: tool steps through its DirectCall (the
// one tool pipeline), prompt steps as runs of it. The host uses its own (host.Host.Call
// and the host's Runner, which follow reloads and pick named agents); this one is for
// programs that embed a loop.Agent directly.
type AgentExecutor struct{ Agent *loop.Agent }

// ToolStep implements Executor.
func (x AgentExecutor) ToolStep(ctx context.Context, name string, args []byte, session string, timeout time.Duration) (loop.ToolResult, loop.RunResult) {
	return x.Agent.DirectCall(ctx, loop.CallInput{SessionID: session, Call: loop.ToolCall{Name: name, Arguments: string(args)}, Timeout: timeout}, nil)
}

// RunPrompt implements Executor; agent must be "" (one agent).
func (x AgentExecutor) RunPrompt(ctx context.Context, _ string, prompt, session string) (loop.RunResult, error) {
	return x.Agent.RunWith(ctx, loop.RunInput{SessionID: session, Messages: []loop.Message{loop.UserMessage(prompt)}}, nil)
}
