package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// ShutdownTimeout bounds the end of a shutdown, after Options.Grace: aborting the runs
// still in progress, letting each store its end, and closing the connections.
const ShutdownTimeout = 15 * time.Second

// LoadToken returns the bearer token: the contents of tokenFile (trimmed) when it is
// given, else envValue (AGENTHOST_TOKEN). "" means no token.
func LoadToken(envValue, tokenFile string) (string, error) {
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return "", fmt.Errorf("--token-file %s is empty", tokenFile)
		}
		return tok, nil
	}
	return strings.TrimSpace(envValue), nil
}

// CheckAddr refuses to serve without a token on anything but a loopback address.
func CheckAddr(addr string, hasToken bool) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if hasToken || isLoopback(addr) {
		return nil
	}
	return fmt.Errorf("refusing to serve on %s without a token: set AGENTHOST_TOKEN or --token-file, or use a loopback address such as 127.0.0.1:8080", addr)
}

// ListenAndServe marks runs dead processes left unfinished as aborted, listens on
// addr (refused without a token unless it is loopback), reports the address it serves
// on through logf, and serves until ctx is done; then it shuts down gracefully.
func (s *Server) ListenAndServe(ctx context.Context, addr string, logf func(format string, args ...any)) error {
	if err := CheckAddr(addr, s.opts.Token != ""); err != nil {
		return err
	}
	n, err := recoverRuns(ctx, s.opts.Store)
	if err != nil {
		return err
	}
	if n > 0 {
		logf("marked %d unfinished run(s) of processes that died as aborted", n)
	}
	tlsConfig, err := s.opts.TLS.config()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
		logf("serving on https://%s", ln.Addr())
	} else {
		if !isLoopback(addr) {
			logf("warning: serving plain HTTP on %s: the token and the sessions cross the network in clear (use --tls-cert and --tls-key, or a TLS proxy in front)", addr)
		}
		logf("serving on http://%s", ln.Addr())
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx is done, then drains (see Drain): the listener stays open
// meanwhile, so probes see /readyz fail and new runs get 503, until the runs in progress
// have ended or Grace has passed; then the connections are closed, within
// ShutdownTimeout more.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.opts.Grace+ShutdownTimeout)
	defer cancel()
	derr := s.Drain(sctx)
	if err := hs.Shutdown(sctx); err != nil {
		return errors.Join(derr, fmt.Errorf("shutdown: %w", err))
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return errors.Join(derr, err)
	}
	return derr
}

// Drain refuses new runs (503 with Retry-After; /readyz fails), lets the runs in
// progress go on for up to Options.Grace, then aborts those still going with
// ErrShuttingDown and waits until each has stored its end (run_finished aborted) and
// closed its stream. A stream of a dispatched run (serve --workers) is not a run of this
// node: it ends at the same moment, telling its client where to pick the run up.
func (s *Server) Drain(ctx context.Context) error {
	s.BeginDrain()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	if s.opts.Grace > 0 {
		grace := time.NewTimer(s.opts.Grace)
		defer grace.Stop()
		select {
		case <-done:
			return nil
		case <-grace.C:
		case <-ctx.Done():
		}
	}
	s.stop(ErrShuttingDown)
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("drain: runs still in progress: %w", ctx.Err())
	}
}

// BeginDrain marks the server draining: new runs are refused with 503 and /readyz fails.
// Runs in progress go on; Drain ends them.
func (s *Server) BeginDrain() {
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
}

// Draining reports whether a shutdown has begun.
func (s *Server) Draining() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.draining
}

// handleReady is GET /readyz, for a load balancer or Kubernetes' readiness probe: 200
// while this node takes runs, 503 once it drains or when Options.Ready fails (its store
// does not answer). No auth, like /healthz: it says nothing about the sessions.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	if s.Draining() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ready": false, "reason": "draining"})
		return
	}
	if s.opts.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		if err := s.opts.Ready(ctx); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ready": false, "reason": err.Error()})
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"ready": true})
}

// readyTimeout bounds Options.Ready: a probe must answer before its own timeout.
const readyTimeout = 2 * time.Second

// recoverRuns ends the runs that dead processes left open, leaving alone the runs a
// live process (a CLI run on the same database) still owns: see loop.recoverRuns. It
// reports how many runs it ended.
func recoverRuns(ctx context.Context, st loop.SessionStore) (int, error) {
	return loop.RecoverRuns(ctx, st)
}
