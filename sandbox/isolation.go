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
