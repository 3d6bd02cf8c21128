package serve

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/oidc"
	"github.com/agenthost/agenthost/surface/cluster"
	"github.com/agenthost/agenthost/surface/server"
	"github.com/agenthost/agenthost/telemetry"
)

// Open opens the host as a server needs it: an approval a run asks for ends the run with
// an interrupt (answered by a later run with "resume", as AG-UI describes), since no
// terminal is there to ask; metrics are on for /metrics.
func Open(ctx context.Context, o host.Options) (*host.Host, error) {
	o.Approver = server.InterruptApprover{}
	o.Metrics = true
	return host.Open(ctx, o)
}

// Config is what Run serves, beside the host. The zero value of each field is the
// command's default but for Addr, which must be set.
type Config struct {
	Addr         string   // listen address; a non-loopback one needs Token
	Token        string   // the administrator's bearer token ("" : loopback only)
	MaxBodyBytes int64    // largest request body (0: server.DefaultMaxBodyBytes)
	AllowHosts   []string // further names accepted in the Host header
	AllowOrigins []string // browser origins allowed, with CORS
	TLS          server.TLSFiles
	// Log receives one record per request and run (nil: discarded); Logf the server's
	// lines (serving on, stopped, retention, reloads).
	Log  *slog.Logger
	Logf func(format string, args ...any)
	// Watch reloads a plugin whose .wasm changes, every WatchInterval (default 300 ms).
	Watch         bool
	WatchInterval time.Duration
	// Cluster makes runs River jobs in the store's PostgreSQL database, Workers of them
	// executed at once on this node (0: accept and stream only). RescueAfter is how long a
	// job may run before it is presumed dead and retried elsewhere (default 10 min).
	Cluster     bool
	Workers     int
	RescueAfter time.Duration
	// Grace is how long the runs in progress may finish once ctx ends (SIGTERM): the node
	// refuses new runs at once (503, /readyz fails), and with Cluster its workers take no
	// new jobs; what is still going when Grace ends is aborted, and a cluster job handed
	// back to River, which retries it on another node. 0 aborts at once.
	Grace time.Duration
	// PruneInterval is how often [store] retention is applied (default an hour).
	PruneInterval time.Duration
	// KeyReload asks to read the store's key file again (the command sends SIGHUP); the
	// file is also read again when it changes, checked every KeyWatchInterval (default 2 s).
	KeyReload        <-chan os.Signal
	KeyWatchInterval time.Duration
}

// Run serves h until ctx ends: the HTTP surface, the cluster's workers when
// Config.Cluster is set, retention and plugin reloads. It returns when the server has
// stopped, its runs aborted and stored as such; the caller closes h.
func Run(ctx context.Context, h *host.Host, c Config) error {
	logf := c.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if c := h.Confinement(); c != "" {
		logf("%s", c) // what this kernel enforces of the commands' confinement
	}
	var dispatch server.Dispatcher
	if c.Cluster {
		cl, err := StartCluster(ctx, h, c.Workers, c.RescueAfter, c.Log)
		if err != nil {
			return err
		}
		defer cl.Close(context.Background())
		// The workers drain beside the HTTP server, from the same signal, for the same grace.
		stopped := make(chan error, 1)
		stop := context.AfterFunc(ctx, func() { stopped <- cl.Stop(c.Grace) })
		defer func() {
			if !stop() { // the drain began: its end, before Close
				if err := <-stopped; err != nil {
					logf("workers: %v", err)
				}
			}
		}()
		dispatch = cl
		go RunSchedules(ctx, h, cl, nil, logf)
	} else {
		go RunSchedules(ctx, h, nil, nil, logf)
	}
	srv, err := NewServer(ctx, h, c, dispatch)
	if err != nil {
		return err
	}
	h.OnDeleteSession(func(_ context.Context, id string) { srv.ForgetSession(id) }) // its A2A tasks
	if c.Watch {
		go h.Watch(ctx, orDefault(c.WatchInterval, 300*time.Millisecond), logf)
	}
	go WatchKeys(ctx, h, c.KeyReload, c.KeyWatchInterval, logf)
	if keep := time.Duration(h.Manifest.Store.Retention); keep > 0 {
		go pruneEvery(ctx, h, keep, orDefault(c.PruneInterval, time.Hour), logf)
	}
	if err := srv.ListenAndServe(ctx, c.Addr, logf); err != nil {
		return err
	}
	logf("stopped")
	return nil
}

// NewServer builds the HTTP surface over h with what the manifest declares (the agent's
// card, workflows, MCP resources, users and shares, [auth.oidc]); dispatch, when not nil,
// queues runs instead of running them here (a cluster).
func NewServer(ctx context.Context, h *host.Host, c Config, dispatch server.Dispatcher) (*server.Server, error) {
	verify, err := Verifier(ctx, h)
	if err != nil {
		return nil, err
	}
	maxBody := c.MaxBodyBytes
	if maxBody == 0 {
		maxBody = server.DefaultMaxBodyBytes
	}
	return server.New(server.Options{Verify: verify, Grace: c.Grace, Ready: Ready(h), Card: server.AgentCard{Name: h.Manifest.Agent.Name, Description: h.Manifest.Agent.Description},
		Agent: h.Runner(), Store: h.Store, Memory: Memory(h), Token: c.Token, MaxBodyBytes: maxBody,
		AllowHosts: append(c.AllowHosts, server.AddrHost(c.Addr)...), AllowOrigins: c.AllowOrigins,
		Metrics: h.Telemetry().Handler(), Log: c.Log, Plugins: func() any { return h.PluginInfo() },
		Schedules: func(ctx context.Context) (any, error) { return h.Schedules(ctx, time.Now()) }, Dispatch: dispatch,
		Resources:  &server.Resources{List: h.MCPResources, Read: h.ReadMCPResource},
		OnFeedback: h.Telemetry().Feedback, TLS: c.TLS, Audit: h.Audit, DeleteSession: h.DeleteSession, Access: Access(h), Door: h.Door(),
		Workflows: &server.Workflows{Find: h.Manifest.Workflow, List: h.Manifest.WorkflowNames, Engine: h.Workflows()},
		Extract: func(ctx context.Context, hd http.Header) context.Context {
			return telemetry.Propagator.Extract(ctx, propagation.HeaderCarrier(hd))
		}})
}

// ErrNotPostgres is StartCluster's answer for a store that is not PostgreSQL: runs are
// River jobs in its database.
var ErrNotPostgres = fmt.Errorf("a cluster needs [store] kind = \"postgres\" (runs are jobs in its database)")

// StartCluster joins the runs' job queue in the store's PostgreSQL database, executing
// workers runs at once on this node (0: only queue). log receives River's and the
// cluster's warnings, and one "run finished" record (info) per run this node executes,
// as serve's request log does for the runs it executes itself (nil: standard error,
// warnings and errors only).
func StartCluster(ctx context.Context, h *host.Host, workers int, rescueAfter time.Duration, log *slog.Logger) (*cluster.Cluster, error) {
	if h.Manifest.Store.Kind != "postgres" {
		return nil, fmt.Errorf("%w; this manifest's store is %s", ErrNotPostgres, h.Manifest.Store.Kind)
	}
	if workers < 0 {
		return nil, fmt.Errorf("workers %d: want 0 or more", workers)
	}
	runLog := log
	if log == nil {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return cluster.New(ctx, cluster.Options{URL: h.Manifest.Store.URL, Runner: h.Runner(), Workflows: h, Schedules: firer{h}, Store: h.Store,
		Workers: workers, RescueAfter: orDefault(rescueAfter, 10*time.Minute), Log: slog.New(warnings{log.Handler()}), RunLog: runLog})
}

// WatchKeys reads the store's key file again when reload delivers or the file changes
// (checked every interval, default 2 s), until ctx ends, so that a serving process takes
// a rotated key ring without a restart (docs/encryption.md); logf is told each outcome. A
// store without keys, or with keys from the environment, is not watched.
func WatchKeys(ctx context.Context, h *host.Host, reload <-chan os.Signal, interval time.Duration, logf func(string, ...any)) {
	if k := h.StoreKeys(); k != nil {
		k.Watch(ctx, orDefault(interval, 2*time.Second), reload, logf)
	}
}

// Ready is the check behind GET /readyz: the store answers and every plugin the
// manifest declares is loaded. Its errors name the part that failed, not the store's
// address or credentials: the probe answers without a token.
func Ready(h *host.Host) func(context.Context) error {
	return func(ctx context.Context) error {
		if _, err := h.Store.Runs(ctx, "agenthost-readyz"); err != nil {
			return fmt.Errorf("the session store (%s) does not answer", h.Manifest.Store.Kind)
		}
		if n, want := len(h.Plugins()), len(h.Manifest.Plugins); n != want {
			return fmt.Errorf("%d of %d plugins loaded", n, want)
		}
		return nil
	}
}

// Access is the store's users and shares, nil when it keeps none.
func Access(h *host.Host) access.Store {
	if as, ok := h.Access(); ok {
		return as
	}
	return nil
}

// Memory is the host's memory service (redaction, quotas, embeddings: the one path the
// remember tool takes too), nil when the manifest keeps no memories.
func Memory(h *host.Host) memory.Store {
	ms, _ := h.Memory()
	return ms
}

// Verifier is [auth.oidc]'s token check, nil without one.
func Verifier(ctx context.Context, h *host.Host) (func(context.Context, string) (access.Principal, error), error) {
	c := h.Manifest.Auth.OIDC
	if c == nil {
		return nil, nil
	}
	v, err := oidc.New(ctx, *c, h.Manifest.Dir)
	if err != nil {
		return nil, fmt.Errorf("[auth.oidc] %w", err)
	}
	return v.Verify, nil
}

// pruneEvery applies retention now and then every interval until ctx ends, saying what
// it deleted; an error is reported and tried again next time.
func pruneEvery(ctx context.Context, h *host.Host, keep, interval time.Duration, logf func(string, ...any)) {
	for {
		res, err := h.Prune(ctx, time.Now().Add(-keep), false)
		switch {
		case err != nil && ctx.Err() == nil:
			logf("retention: %v", err)
		case len(res.Deleted) > 0 || len(res.Busy) > 0:
			logf("retention: deleted %d session(s) not updated for %s; %d in use kept for next time", len(res.Deleted), keep, len(res.Busy))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// warnings passes a handler the records of level warning and above: River's own info
// lines are not the operator's concern.
type warnings struct{ slog.Handler }

func (w warnings) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}
func (w warnings) WithAttrs(as []slog.Attr) slog.Handler { return warnings{w.Handler.WithAttrs(as)} }
func (w warnings) WithGroup(name string) slog.Handler    { return warnings{w.Handler.WithGroup(name)} }
