package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// ShutdownTimeout bounds a graceful shutdown: aborting the runs in progress, letting
// each store its end, and closing the connections.
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
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if hasToken {
		return nil
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	return fmt.Errorf("refusing to serve on %s without a token: set AGENTHOST_TOKEN or --token-file, or use a loopback address such as 127.0.0.1:8080", addr)
}

// ListenAndServe marks runs a previous process left unfinished as aborted, listens on
// addr (refused without a token unless it is loopback), reports the address it serves
// on through logf, and serves until ctx is done; then it shuts down gracefully.
func (s *Server) ListenAndServe(ctx context.Context, addr string, logf func(format string, args ...any)) error {
	if err := CheckAddr(addr, s.opts.Token != ""); err != nil {
		return err
	}
	n, err := RecoverRuns(ctx, s.opts.Store)
	if err != nil {
		return err
	}
	if n > 0 {
		logf("marked %d unfinished run(s) from a previous server as aborted", n)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	logf("serving on http://%s", ln.Addr())
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx is done, then drains the runs (see Drain) and closes the
// connections, within ShutdownTimeout.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
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

// Drain refuses new runs (503), aborts the runs in progress with ErrShuttingDown and
// waits until each has stored its end (run_finished aborted) and closed its stream.
func (s *Server) Drain(ctx context.Context) error {
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
	s.stop(ErrShuttingDown)
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("drain: runs still in progress: %w", ctx.Err())
	}
}

// RecoverRuns ends the runs a killed process left open (a run record with no status):
// it appends a run_finished{aborted, cancelled} event to the session and saves the run
// as aborted, so the stored session reads as if the run had been aborted and a new run
// can continue it (the loop executes any tool call left without a result, rule L14).
// It must run before any run starts. It reports how many runs it ended; a store that
// cannot list its sessions (memory) has none to recover.
func RecoverRuns(ctx context.Context, st loop.SessionStore) (int, error) {
	lister, ok := st.(sessionLister)
	if !ok {
		return 0, nil
	}
	sessions, err := lister.Sessions(ctx)
	if err != nil {
		return 0, fmt.Errorf("recover runs: %w", err)
	}
	n := 0
	for _, si := range sessions {
		runs, err := st.Runs(ctx, si.ID)
		if err != nil {
			return n, fmt.Errorf("recover runs of session %q: %w", si.ID, err)
		}
		for _, run := range runs {
			if run.Status != "" {
				continue
			}
			if err := abortStoredRun(ctx, st, run); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

func abortStoredRun(ctx context.Context, st loop.SessionStore, run loop.RunRecord) error {
	entries, err := st.Load(ctx, run.SessionID)
	if err != nil {
		return fmt.Errorf("recover run %q: load session %q: %w", run.ID, run.SessionID, err)
	}
	var evSeq int64
	agent := ""
	for _, e := range entries {
		if e.Kind == loop.EntryEvent && e.Event != nil && e.Event.RunID == run.ID {
			evSeq, agent = max(evSeq, e.Event.Seq), e.Event.Agent
		}
	}
	now := time.Now().UTC()
	ev := &loop.Event{Seq: evSeq + 1, Time: now, SessionID: run.SessionID, RunID: run.ID, Agent: agent,
		Type: loop.EventRunFinished, Data: loop.RunFinishedData{Status: loop.StatusAborted, Reason: loop.ReasonCancelled, Usage: run.Usage}}
	entry := loop.Entry{Seq: int64(len(entries)) + 1, RunID: run.ID, Time: now, Kind: loop.EntryEvent, Event: ev}
	if err := st.Append(ctx, run.SessionID, entry); err != nil {
		return fmt.Errorf("recover run %q: %w", run.ID, err)
	}
	run.Status, run.Reason, run.Ended = loop.StatusAborted, loop.ReasonCancelled, now
	if err := st.SaveRun(ctx, run); err != nil {
		return fmt.Errorf("recover run %q: %w", run.ID, err)
	}
	return nil
}
