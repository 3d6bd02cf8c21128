package loop

import "context"

// CallInfo says which run a call belongs to. The loop puts it in the context
// of the whole run (hooks, guardrails, context strategies and the model see it,
// CallID empty) and of every Tool.Call (CallID set), so a plugin host can key
// per-session state (the sandbox keys plugin instances by SessionID) without a
// wider interface.
type CallInfo struct {
	SessionID, RunID, Agent, CallID string
}

type callInfoKey struct{}

// callIDKey holds a *string: the loop adds a tool call's id to a context that already
// carries the run's CallInfo, without boxing a whole CallInfo for every call.
type callIDKey struct{}

func withCallID(ctx context.Context, id *string) context.Context {
	return context.WithValue(ctx, callIDKey{}, id)
}

// WithCallInfo returns ctx carrying info.
func WithCallInfo(ctx context.Context, info CallInfo) context.Context {
	return context.WithValue(ctx, callInfoKey{}, info)
}

// CallInfoFrom returns the CallInfo of ctx, if the loop set one.
func CallInfoFrom(ctx context.Context) (CallInfo, bool) {
	info, ok := ctx.Value(callInfoKey{}).(CallInfo)
	if id, _ := ctx.Value(callIDKey{}).(*string); id != nil {
		info.CallID, ok = *id, true
	}
	return info, ok
}
