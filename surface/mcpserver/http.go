package mcpserver

import (
	"net/http"
	"sync"
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
	// Caller, when set, names the user a request authenticated as ("" for none, or a
	// caller without a name): that user's calls and runs are theirs (user.go).
	Caller func(*http.Request) string
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
	h := authenticated(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{SessionTimeout: idle}), o.Caller)
	if max < 0 {
		return h
	}
	c := &sessionCap{srv: srv, max: max, ids: map[string]bool{}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A POST without a session id may open a session (initialize).
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
			if c.full() {
				w.Header().Set("Retry-After", "60")
				http.Error(w, "too many MCP sessions are open; try again when one ends", http.StatusServiceUnavailable)
				return
			}
			w = &sessionRecorder{ResponseWriter: w, cap: c}
		}
		h.ServeHTTP(w, r)
	})
}

// sessionCap counts the sessions the handler opened: those whose id went out in an
// Mcp-Session-Id response header, and that the server still holds (an idle one it
// dropped, or one its client deleted, no longer counts). The sessionless requests of
// newer clients open none.
type sessionCap struct {
	srv *mcp.Server
	max int
	mu  sync.Mutex
	ids map[string]bool
}

func (c *sessionCap) full() bool {
	live := map[string]bool{}
	for ss := range c.srv.Sessions() {
		live[ss.ID()] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.ids {
		if !live[id] {
			delete(c.ids, id)
		}
	}
	return len(c.ids) >= c.max
}

func (c *sessionCap) opened(id string) {
	c.mu.Lock()
	c.ids[id] = true
	c.mu.Unlock()
}

// sessionRecorder notes the session id a response hands out.
type sessionRecorder struct {
	http.ResponseWriter
	cap  *sessionCap
	seen bool
}

func (s *sessionRecorder) WriteHeader(code int) {
	s.note()
	s.ResponseWriter.WriteHeader(code)
}

func (s *sessionRecorder) Write(b []byte) (int, error) {
	s.note()
	return s.ResponseWriter.Write(b)
}

func (s *sessionRecorder) note() {
	if s.seen {
		return
	}
	s.seen = true
	if id := s.Header().Get("Mcp-Session-Id"); id != "" {
		s.cap.opened(id)
	}
}

// Flush keeps streaming responses (SSE) flowing through the recorder.
func (s *sessionRecorder) Flush() {
	s.note()
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (s *sessionRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
