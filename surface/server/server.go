package server

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/agenthost/agenthost/a2abridge"
	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/memory"
)

// Runner runs the loop; *loop.Agent is one.
type Runner interface {
	RunWith(ctx context.Context, in loop.RunInput, emit func(loop.Event)) (loop.RunResult, error)
	Abort(sessionID, runID string) bool
}

// Options configure a Server. Agent and Store are required.
type Options struct {
	Agent Runner
	Store loop.SessionStore
	// Token, when set, is required as "Authorization: Bearer TOKEN" on every /v1 request.
	Token string
	// MaxBodyBytes bounds a request body; default 1 MiB. A larger body is refused with 413.
	MaxBodyBytes int64
	// BodyReadTimeout bounds the reading of a whole request body; default 30 s. A client
	// that has not sent its body by then gets 408 and its connection is closed.
	BodyReadTimeout time.Duration
	// AllowHosts are extra names the Host header may carry (--allow-host), beside the
	// loopback names and the address a connection arrives on. See guard.go.
	AllowHosts []string
	// AllowOrigins are the browser origins ("http://localhost:5173") besides the server's
	// own that may call the API (--allow-origin); they get CORS headers. See guard.go.
	AllowOrigins []string
	// Metrics, when set, is served on GET /metrics (Prometheus text), behind the token
	// like the API: it names tools and costs.
	Metrics http.Handler
	// Extract, when set, continues a trace from a request's headers (traceparent): the
	// run's spans become children of the caller's.
	Extract func(ctx context.Context, h http.Header) context.Context
	// Log, when set, gets one record per HTTP request and one per run end.
	Log *slog.Logger
	// Dispatch, when set, runs the runs elsewhere (surface/cluster, serve --workers): POST
	// /v1/runs enqueues and streams the run's stored events (dispatch.go).
	Dispatch Dispatcher
	// Plugins, when set, lists the loaded plugins for GET /v1/plugins (the console's
	// plugin panel); host.(*Host).PluginInfo is one.
	Plugins func() any
	// Schedules, when set, lists the declared schedules with their next fire for GET
	// /v1/schedules; serve fills it from host.(*Host).Schedules.
	Schedules func(context.Context) (any, error)
	// Routes are more handlers, by pattern ("/mcp"), behind the same guard and token as
	// the API: how `agenthost mcp serve --http` serves MCP. With Routes, Agent may be nil
	// (a server without the run API).
	Routes map[string]http.Handler
	// OnFeedback, when set, is told of each feedback stored through POST
	// /v1/sessions/{id}/runs/{run}/feedback (serve counts it in /metrics).
	OnFeedback func(ctx context.Context, f loop.Feedback)
	// Audit, when set, records what the API deletes (memories) in the audit log
	// (host.Host.Audit); GET /v1/audit reads the log from Store.
	Audit func(ctx context.Context, r audit.Record) error
	// TLS, when set, makes ListenAndServe serve HTTPS with this certificate and key
	// (tls.go).
	TLS TLSFiles
	// Workflows, when set, serves POST /v1/workflows/{name}/runs (workflows.go).
	Workflows *Workflows
	// Access, when set, authenticates users by their tokens and decides who may act on
	// which session (access.go); the session stores implement it.
	Access access.Store
	// Door is the host's decision of who may do what (door.go; host.(*Host).Door): every
	// route on a stored object and every run asks it. Required with Access.
	Door Door
	// Verify, when set, authenticates a JWT bearer token (OIDC, oidc) as a principal.
	Verify func(ctx context.Context, token string) (access.Principal, error)
	// DeleteSession, when set, serves DELETE /v1/sessions/{id}; host.(*Host).DeleteSession
	// is one (it records the deletion in the audit log).
	DeleteSession func(ctx context.Context, id, actor string) error
	// Card names the agent on its A2A agent card (a2a.go).
	Card AgentCard
	// Resources, when set, lets the console attach MCP resources to a message (resources.go).
	Resources *Resources
	// Grace is how long the runs in progress may go on once a shutdown begins (Drain):
	// new runs are refused from the start (503 with Retry-After), and the runs still going
	// when Grace ends are aborted and stored as such. 0 aborts them at once.
	Grace time.Duration
	// Ready, when set, is asked by GET /readyz whether this node can take runs (its store
	// answers, its plugins are loaded); an error makes the probe fail (503) with the
	// error's message. A draining server is not ready whatever Ready says.
	Ready func(ctx context.Context) error
	// Memory is the host's memory service (host.(*Host).Memory), which the memory routes
	// use: what they add is then redacted, held to its user's quota and embedded like
	// the model's own memories. Nil: the routes use Store's memories as they are (a
	// server without a host).
	Memory memory.Store
}

// DefaultMaxBodyBytes is the request body limit when Options.MaxBodyBytes is 0.
const DefaultMaxBodyBytes = 1 << 20

// DefaultBodyReadTimeout is the body read bound when Options.BodyReadTimeout is 0.
const DefaultBodyReadTimeout = 30 * time.Second

// ErrShuttingDown is the cause with which Shutdown aborts the runs in progress.
var ErrShuttingDown = errors.New("server shutting down")

// Server is the HTTP API. Create it with New; it is an http.Handler.
type Server struct {
	opts    Options
	mux     *http.ServeMux
	handler http.Handler // mux behind the guard (guard.go)
	token   [32]byte     // sha256 of Options.Token
	runsCtx context.Context
	stop    context.CancelCauseFunc

	mu       sync.Mutex
	draining bool
	active   map[string]string // session -> its run this server streams (one at a time)
	wg       sync.WaitGroup    // run handlers in progress

	a2aTasks *a2abridge.Tasks // the A2A tasks this process keeps (a2a.go)
}

// New checks the options and builds the handler.
func New(opts Options) (*Server, error) {
	if opts.Agent == nil && len(opts.Routes) == 0 {
		return nil, errors.New("server: no agent")
	}
	if opts.Store == nil {
		return nil, errors.New("server: no session store")
	}
	if opts.Access != nil && opts.Door == nil {
		return nil, errors.New("server: users (Access) and no door to decide what they may do")
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if err := CheckOrigins(opts.AllowOrigins); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if opts.BodyReadTimeout <= 0 {
		opts.BodyReadTimeout = DefaultBodyReadTimeout
	}
	s := &Server{opts: opts, mux: http.NewServeMux(), active: map[string]string{}}
	s.token = sha256.Sum256([]byte(opts.Token))
	s.runsCtx, s.stop = context.WithCancelCause(context.Background())
	s.mux.HandleFunc("GET /healthz", s.handleHealth)
	s.mux.HandleFunc("GET /readyz", s.handleReady)
	for pattern, h := range opts.Routes {
		s.mux.Handle(pattern, s.auth(s.atLeast(access.RoleUser, h.ServeHTTP)))
	}
	if opts.Agent == nil {
		s.handler = s.guard(s.mux)
		return s, nil
	}
	s.mux.HandleFunc("GET /{$}", s.handlePage)
	s.mux.HandleFunc("GET /trace.js", s.handleTraceJS)
	s.mux.HandleFunc("GET /workflows.js", s.handleWorkflowsJS)
	s.mux.HandleFunc("GET /fork.js", s.handleForkJS)
	s.mountA2A()
	s.mux.Handle("POST /v1/runs", s.auth(s.handleRun))
	s.mux.Handle("POST /v1/runs/{run}/abort", s.auth(s.handleAbort))
	s.mux.Handle("POST /v1/sessions/{session}/runs/{run}/abort", s.auth(s.handleAbort))
	s.mux.Handle("GET /v1/sessions", s.auth(s.handleSessions))
	s.mux.Handle("GET /v1/sessions/{id}", s.auth(s.onSession(access.Read, s.handleSession)))
	s.mux.Handle("DELETE /v1/sessions/{id}", s.auth(s.onSession(access.Delete, s.handleDeleteSession)))
	s.mux.Handle("POST /v1/sessions/{id}/fork", s.auth(s.handleFork))
	s.mux.Handle("GET /v1/sessions/{id}/diff/{other}", s.auth(s.handleCompare))
	s.mux.Handle("GET /v1/sessions/{id}/fixture", s.auth(s.handleFixture))
	s.mux.Handle("GET /v1/sessions/{id}/shares", s.auth(s.onSession(access.ShareIt, s.handleShares)))
	s.mux.Handle("POST /v1/sessions/{id}/shares", s.auth(s.onSession(access.ShareIt, s.handleShare)))
	s.mux.Handle("DELETE /v1/sessions/{id}/shares/{user}", s.auth(s.onSession(access.ShareIt, s.handleUnshare)))
	s.mux.Handle("GET /v1/sessions/{id}/runs/{run}/events", s.auth(s.onSession(access.Read, s.handleRunEvents)))
	s.mux.Handle("POST /v1/sessions/{id}/runs/{run}/feedback", s.auth(s.onSession(access.Read, s.handleFeedback)))
	s.mux.Handle("GET /v1/sessions/{id}/runs/{run}/stream", s.auth(s.onSession(access.Read, s.handleRunStream)))
	s.mux.Handle("GET /v1/insights", s.auth(s.atLeast(access.RoleOperator, s.handleInsights)))
	s.mux.Handle("GET /v1/audit", s.auth(s.atLeast(access.RoleAdmin, s.handleAudit)))
	s.mux.Handle("GET /v1/approvals/grants", s.auth(s.atLeast(access.RoleUser, s.handleGrants)))
	s.mux.Handle("DELETE /v1/approvals/grants/{id}", s.auth(s.atLeast(access.RoleUser, s.handleRevokeGrant)))
	s.mux.HandleFunc("GET /approvals.js", func(w http.ResponseWriter, _ *http.Request) { serveJS(w, approvalsJS) })
	s.mux.Handle("GET /v1/memory", s.auth(s.handleMemoryList))
	s.mux.Handle("POST /v1/memory", s.auth(s.handleMemoryAdd))
	s.mux.Handle("DELETE /v1/memory", s.auth(s.handleMemoryDelete))
	s.mux.Handle("DELETE /v1/memory/{id}", s.auth(s.handleMemoryDelete))
	s.mux.Handle("GET /v1/plugins", s.auth(s.handlePlugins))
	if opts.Schedules != nil {
		s.mux.Handle("GET /v1/schedules", s.auth(s.atLeast(access.RoleOperator, s.handleSchedules)))
	}
	s.routeResources()
	s.routeMedia()
	s.routeConnect()
	s.routeSecrets()
	s.mux.Handle("GET /v1/whoami", s.auth(s.handleWhoami))
	if opts.Workflows != nil {
		s.mux.Handle("POST /v1/workflows/{name}/runs", s.auth(s.atLeast(access.RoleUser, s.handleWorkflowRun)))
		// A workflow run is its owner's: the door lets each caller read her own (admins and
		// operators every run).
		s.mux.Handle("GET /v1/workflows", s.auth(s.atLeast(access.RoleViewer, s.handleWorkflowList)))
		s.mux.Handle("GET /v1/workflows/{name}/runs", s.auth(s.atLeast(access.RoleViewer, s.handleWorkflowRuns)))
		s.mux.Handle("GET /v1/workflows/{name}/runs/{id}", s.auth(s.atLeast(access.RoleViewer, s.handleWorkflowRecord)))
	}
	if opts.Metrics != nil {
		s.mux.Handle("GET /metrics", s.auth(s.atLeast(access.RoleOperator, opts.Metrics.ServeHTTP)))
	}
	s.mux.Handle("/v1/", s.auth(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
	}))
	s.handler = s.guard(s.mux)
	if opts.Log != nil {
		s.handler = s.logRequests(s.handler)
	}
	return s, nil
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// auth authenticates the caller (access.go) and puts them in the request's context. The
// administrator's token is compared as sha256 digests, in constant time, so neither the
// token nor its length leaks through timing; users' tokens are looked up by their hash.
func (s *Server) auth(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, ok := s.authenticate(w, r)
		if !ok {
			return
		}
		if id := requestID(r); id != "" {
			ctx = audit.WithRequestID(ctx, id)
		}
		if p, ok := PrincipalFrom(ctx); ok { // the host's door authorises on it (host.Door)
			ctx = access.WithPrincipal(ctx, p)
		}
		next(w, r.WithContext(ctx))
	})
}

// handleWhoami is GET /v1/whoami: the caller as the server sees them (the console shows
// it).
func (s *Server) handleWhoami(w http.ResponseWriter, r *http.Request) {
	p, _ := PrincipalFrom(r.Context())
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) handleHealth(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}

// errorBody is every error response: {"error": "..."}.
type errorBody struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, errorBody{Error: msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
