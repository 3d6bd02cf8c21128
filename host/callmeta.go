package host

import (
	"context"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/sandbox"
)

// withCallMeta hands an mcp plugin the call's id, session and run as the tools/call
// _meta (and a wasi plugin the same as AGENTHOST_CALL_ID, … in its environment) ("agenthost/call_id", "agenthost/session_id", "agenthost/run_id"). The id is the
// one the model gave and the session stores, so it is the same when a resumed run calls
// the tool again for a call whose result was never stored: a tool with side effects
// keys them by it and answers a repeat without repeating them (at least once,
// plugins/sdk/ABI.md).
func withCallMeta(ctx context.Context, c loop.ToolCall) context.Context {
	meta := map[string]any{}
	if c.ID != "" {
		meta["agenthost/call_id"] = c.ID
	}
	if info, ok := loop.CallInfoFrom(ctx); ok {
		meta["agenthost/session_id"] = info.SessionID
		meta["agenthost/run_id"] = info.RunID
	}
	return sandbox.WithCallMeta(ctx, meta)
}
