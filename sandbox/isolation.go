package sandbox

import (
	"context"
	"fmt"
)

// Isolation settings: which calls may share an instance (its globals, its
// linear memory, its open WASI descriptors). See README.md, "Isolation".
const (
	// IsolationPooled reuses an instance for any later call of the plugin,
	// whatever session or user it serves: the cheapest, and only for
	// plugins trusted to keep nothing between calls.
	IsolationPooled = "pooled"
	// IsolationSession reuses an instance only for calls of the same session
	// (the key set with WithSession). The default.
	IsolationSession = "session"
	// IsolationCall gives every call a fresh instance.
	IsolationCall = "call"
)

// DefaultIsolation is the isolation of a zero Permissions.Isolation.
const DefaultIsolation = IsolationSession

func validIsolation(s string) error {
	switch s {
	case IsolationPooled, IsolationSession, IsolationCall:
		return nil
	}
	return fmt.Errorf("isolation %q: want pooled, session or call", s)
}

type sessionKey struct{}

// WithSession returns a context whose plugin calls belong to session id: with
// isolation "session" they share instances only with calls of the same id.
// Calls without a session id share instances among themselves.
func WithSession(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, sessionKey{}, id)
}

func sessionOf(ctx context.Context) string {
	id, _ := ctx.Value(sessionKey{}).(string)
	return id
}

type callMetaKey struct{}

// WithCallMeta returns a context whose tool calls carry meta to an mcp plugin as the
// request's _meta (MCP's place for what is about a request rather than in it): in the
// v1 "params" and the v2 "request" and "context". The host puts the call's id there,
// so a tool with side effects can recognise a call it has already served (a resumed
// run calls again a tool whose result was not stored: at least once, plugins/sdk/ABI.md).
// The sandbox passes it through unread, except that a wasi command, which has no request
// envelope, gets its "agenthost/" strings as environment variables (callEnv).
func WithCallMeta(ctx context.Context, meta map[string]any) context.Context {
	return context.WithValue(ctx, callMetaKey{}, meta)
}

func callMetaOf(ctx context.Context) map[string]any {
	meta, _ := ctx.Value(callMetaKey{}).(map[string]any)
	return meta
}
