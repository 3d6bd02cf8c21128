package mcpserver

import (
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions bound what Streamable HTTP clients can hold open.
type HTTPOptions struct {
	// IdleTimeout drops an MCP session that sent no request for this long (its
	// instances and lock go with it; a client that comes back starts a new session).
	// Default 30 minutes; negative keeps sessions until the client deletes them.
	IdleTimeout time.Duration
	// MaxSessions caps the MCP sessions open at once; a client that would open one
	// more gets 503 until one ends. Default 256; negative is no cap.
	MaxSessions int
}

// Defaults of HTTPOptions.
const (
	DefaultIdleTimeout = 30 * time.Minute
	DefaultMaxSessions = 256
)

// HTTPHandler serves srv over Streamable HTTP with sessions bounded in time and
// number: each session holds plugin instances (isolation "session") and a store
// session, so a client that opens sessions without end must not hold memory without end.
func HTTPHandler(srv *mcp.Server, o HTTPOptions) http.Handler {
	idle := o.IdleTimeout
	switch {
	case idle == 0:
		idle = DefaultIdleTimeout
	case idle < 0:
		idle = 0 // the SDK's "never"
	}
	max := o.MaxSessions
	if max == 0 {
		max = DefaultMaxSessions
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{SessionTimeout: idle})
	if max < 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A POST without a session id opens a session (initialize).
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" && open(srv) >= max {
			w.Header().Set("Retry-After", "60")
			http.Error(w, "too many MCP sessions are open; try again when one ends", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// open counts the server's sessions that outlive a request (those with an id): the
// ephemeral session of a sessionless request ends with it.
func open(srv *mcp.Server) int {
	n := 0
	for ss := range srv.Sessions() {
		if ss.ID() != "" {
			n++
		}
	}
	return n
}
