package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/manifest"
	"github.com/agenthost/agenthost/serve"
	"github.com/agenthost/agenthost/surface/server"
)

func newServeCmd() *cobra.Command {
	var (
		addr, provider, tokenFile string
		maxBody                   int64
		allowHosts, allowOrigins  []string
		watch                     bool
		logFormat                 string
		workers                   int
		storeWait                 time.Duration
		tlsFiles                  server.TLSFiles
		rescueAfter, grace        time.Duration
	)
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Serve the agent over HTTP: AG-UI events over SSE, a web console at /, /metrics",
		Long: `Serve the agent declared in the manifest over HTTP.

POST /v1/runs takes an AG-UI RunAgentInput and streams AG-UI events (SSE); tool calls
that need approval end the run with an interrupt, answered by a new run with "resume".
The bearer token comes from AGENTHOST_TOKEN or --token-file; without one the server only
binds a loopback address. SIGHUP reads the store's key file again (a rotated key ring).
SIGINT/SIGTERM drain the node: /readyz fails and new runs are refused (503 with
Retry-After) at once; the runs in progress may finish for --grace ([serve] grace, default
20s), then those still going are aborted (stored as aborted) and, with --workers, handed
back to River, which continues them on another node. GET /healthz answers while the
process is up; GET /readyz while it takes runs (its store answers, its plugins are loaded).

Requests from browsers are checked on every route, with or without a token: the Host
header must be a loopback name, the listen address or an --allow-host name (else 403);
an Origin other than the server's own is refused (403) unless --allow-origin lists it,
and only listed origins get CORS answers; POST bodies must be application/json (415).`,
		Example: `  agenthost serve                              # http://127.0.0.1:8080/ is the web console
  AGENTHOST_TOKEN=secret agenthost serve --addr 0.0.0.0:8080 --allow-host agents.example.com
  agenthost serve --watch --log-format json --allow-origin http://localhost:5173
  agenthost -c cluster.toml serve --workers 4
  agenthost -c deploy/agent.toml serve --locked   # refuse oci:// plugins that deploy/agent.lock does not pin`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			token, err := listenFlags(addr, tokenFile, allowOrigins, tlsFiles)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			hup := keyReload(ctx) // from the start: SIGHUP's default would end the process
			logger, err := newLogger(cmd.ErrOrStderr(), logFormat)
			if err != nil {
				return usage(err)
			}
			if cmd.Flags().Changed("workers") {
				storeWait = 0 // a run's job is retried by River from what was stored (surface/cluster/outage.go)
			}
			m, err := manifest.LoadWith(manifestPath(cmd), lockMode(cmd))
			if err != nil {
				return err
			}
			// A manifest with no provider (tools and workflows only, as examples/workflows)
			// is served without one: its runs are refused, its workflows run.
			noProvider := provider == "" && len(m.Agent.Provider) == 0
			if noProvider && watch {
				return usage(errors.New("--watch reloads the agent's plugins and needs a provider: set agent.provider or --provider"))
			}
			h, err := serve.Open(ctx, host.Options{OnCompile: compileNote(cmd), Loaded: m, Provider: provider, NoProvider: noProvider,
				Stderr: providerLog(cmd), StoreOutage: storeWait})
			if err != nil {
				return err
			}
			defer h.Close()
			warn(cmd, h)
			if noProvider {
				fmt.Fprintln(cmd.ErrOrStderr(), "agenthost: no provider in the manifest: serving tools and workflows; runs (POST /v1/runs) are refused until agent.provider names one")
			}
			clustered := cmd.Flags().Changed("workers")
			if err := checkCluster(h, clustered, workers); err != nil {
				return err
			}
			err = serve.Run(ctx, h, serve.Config{Grace: graceOf(cmd, h.Manifest, grace), KeyReload: hup, Addr: addr, Token: token, MaxBodyBytes: maxBody, AllowHosts: allowHosts, AllowOrigins: allowOrigins,
				TLS: tlsFiles, Log: logger, Logf: func(format string, args ...any) {
					fmt.Fprintf(cmd.ErrOrStderr(), "agenthost: "+format+"\n", args...)
				}, Watch: watch, WatchInterval: watchInterval, Cluster: clustered, Workers: workers, RescueAfter: rescueAfter})
			if err != nil {
				return failed(err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&logFormat, "log-format", "text", "request and run log records: text or json")
	f.BoolVar(&watch, "watch", false, "reload a plugin whose .wasm changes, between runs, without stopping")
	f.StringVar(&addr, "addr", "127.0.0.1:8080", "listen address (non-loopback needs a token)")
	f.StringVar(&provider, "provider", "", "use this [providers.NAME] instead of agent.provider")
	f.StringVar(&tokenFile, "token-file", "", "read the bearer token from this file (default: $AGENTHOST_TOKEN)")
	f.Int64Var(&maxBody, "max-body", server.DefaultMaxBodyBytes, "largest accepted request body, in bytes")
	f.StringArrayVar(&allowHosts, "allow-host", nil, "also accept this name in the Host header (repeatable)")
	f.StringArrayVar(&allowOrigins, "allow-origin", nil, "allow browser requests (with CORS) from this origin, e.g. http://localhost:5173 (repeatable)")
	f.IntVar(&workers, "workers", 0, "with a postgres store: runs are durable jobs (River); execute N at once on this node (0: only accept and stream)")
	f.StringVar(&tlsFiles.Cert, "tls-cert", "", "serve HTTPS with this certificate chain (PEM; with --tls-key)")
	f.StringVar(&tlsFiles.Key, "tls-key", "", "the private key of --tls-cert (PEM)")
	f.DurationVar(&storeWait, "store-wait", 2*time.Minute, "a run whose store is unavailable (a database restarting) waits this long for it, then fails (0: fails at once; with --workers River retries the run instead)")
	f.DurationVar(&rescueAfter, "rescue-after", 10*time.Minute, "with --workers: a job running this long is presumed dead and retried on another worker")
	graceFlag(f, &grace)
	return cmd
}

// defaultGrace is how long the runs in progress may finish after SIGTERM when neither
// --grace nor [serve] grace says: under Kubernetes' default termination grace (30s) with
// room for the aborts to be stored.
const defaultGrace = 20 * time.Second

func graceFlag(f *pflag.FlagSet, grace *time.Duration) {
	f.DurationVar(grace, "grace", defaultGrace, "after SIGTERM, how long the runs in progress may finish before they are aborted (default: [serve] grace, else 20s; 0: abort at once)")
}

// graceOf is --grace when given, else the manifest's [serve] grace, else defaultGrace.
func graceOf(cmd *cobra.Command, m *manifest.Manifest, flag time.Duration) time.Duration {
	if cmd.Flags().Changed("grace") || m.Serve.Grace == nil {
		return max(flag, 0)
	}
	return time.Duration(*m.Serve.Grace)
}

// checkCluster refuses --workers on a store that cannot queue runs, as a usage error.
func checkCluster(h *host.Host, clustered bool, workers int) error {
	if !clustered {
		return nil
	}
	if h.Manifest.Store.Kind != "postgres" {
		return usage(fmt.Errorf("--workers needs [store] kind = \"postgres\" (runs are jobs in its database); this manifest's store is %s", h.Manifest.Store.Kind))
	}
	if workers < 0 {
		return usage(fmt.Errorf("--workers %d: want 0 or more", workers))
	}
	return nil
}

// newWorkerCmd is `agenthost worker`: a node that only executes runs.
func newWorkerCmd() *cobra.Command {
	var (
		provider    string
		workers     int
		rescueAfter time.Duration
		grace       time.Duration
	)
	cmd := &cobra.Command{
		Use:   "worker [flags]",
		Short: "Execute runs queued by serve --workers nodes (needs a postgres store)",
		Long: `Execute the runs that serve --workers nodes queue in the store's PostgreSQL database
(River jobs), N at once, until SIGINT/SIGTERM: then it takes no new job, lets the runs in
progress finish for --grace, and hands those still going back to River for another
worker. A run whose worker dies is retried on
another worker, continuing its stored session: tool calls with stored results do not run
again. Workflow runs started over HTTP are jobs too, resumed from their stored record:
a step that ended does not run again.`,
		Example: `  agenthost -c cluster.toml worker --workers 4
  agenthost -c cluster.toml worker --rescue-after 30m
  agenthost -c cluster.toml worker --locked`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			h, err := host.Open(ctx, host.Options{OnCompile: compileNote(cmd), Manifest: manifestPath(cmd), Lock: lockMode(cmd), Provider: provider,
				Approver: server.InterruptApprover{}, Stderr: providerLog(cmd)})
			if err != nil {
				return err
			}
			defer h.Close()
			warn(cmd, h)
			if workers < 1 {
				return usage(fmt.Errorf("--workers %d: a worker needs 1 or more", workers))
			}
			if err := checkCluster(h, true, workers); err != nil {
				return err
			}
			cl, err := serve.StartCluster(ctx, h, workers, rescueAfter, slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)))
			if err != nil {
				return failed(err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "agenthost: worker executing up to %s at once\n", plural(workers, "run"))
			go serve.WatchKeys(ctx, h, keyReload(ctx), 0, func(format string, args ...any) {
				fmt.Fprintf(cmd.ErrOrStderr(), "agenthost: "+format+"\n", args...)
			})
			<-ctx.Done()
			serr := cl.Stop(graceOf(cmd, h.Manifest, grace))
			return errors.Join(serr, cl.Close(context.Background()))
		},
	}
	f := cmd.Flags()
	f.StringVar(&provider, "provider", "", "use this [providers.NAME] instead of agent.provider")
	f.IntVar(&workers, "workers", 1, "runs executed at once")
	f.DurationVar(&rescueAfter, "rescue-after", 10*time.Minute, "a job running this long is presumed dead and retried on another worker")
	graceFlag(f, &grace)
	return cmd
}

// newLogger is the slog logger of --log-format: text (key=value) or JSON, on w.
func newLogger(w io.Writer, format string) (*slog.Logger, error) {
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, nil)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, nil)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// listenFlags checks what an HTTP listener is given (serve, mcp serve --http) and returns
// the bearer token: AGENTHOST_TOKEN or --token-file; without one only loopback binds.
func listenFlags(addr, tokenFile string, allowOrigins []string, tlsFiles server.TLSFiles) (string, error) {
	if err := server.CheckTLS(tlsFiles); err != nil {
		return "", usage(err)
	}
	token, err := server.LoadToken(os.Getenv("AGENTHOST_TOKEN"), tokenFile)
	if err != nil {
		return "", usage(err)
	}
	if err := server.CheckAddr(addr, token != ""); err != nil {
		return "", usage(err)
	}
	if err := server.CheckOrigins(allowOrigins); err != nil {
		return "", usage(fmt.Errorf("--allow-origin: %w", err))
	}
	return token, nil
}

// keyReload delivers SIGHUP, which asks serve and worker to read the store's key file
// again (docs/encryption.md), until ctx ends.
func keyReload(ctx context.Context) <-chan os.Signal {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	context.AfterFunc(ctx, func() { signal.Stop(hup) })
	return hup
}
