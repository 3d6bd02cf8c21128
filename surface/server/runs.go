package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/loop"
)

// handleRun is POST /v1/runs: decode the RunAgentInput, start the run, stream it.
func (s *Server) handleRun(w http.ResponseWriter, r *http.Request) {
	var ai RunAgentInput
	if !s.readJSON(w, r, &ai) {
		return
	}
	in, err := runInput(ai)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid RunAgentInput: "+err.Error())
		return
	}
	if code, msg := s.claim(in); code != 0 {
		writeClaimError(w, code, msg)
		return
	}
	// The claim ends before the run's last frame is sent (sse.beforeEnd), so a client
	// that starts the next run on the session as soon as it reads RUN_FINISHED is not
	// refused as overlapping this one; or when the handler returns, if no end was sent.
	release := sync.OnceFunc(func() { s.release(in) })
	defer release()
	ctx := withRelease(r.Context(), release)
	r = r.WithContext(ctx)
	// The session as stored before the run: what the client resent is matched against
	// it (dropEchoes), and a run that continues a thread starts with it.
	entries, err := s.opts.Store.Load(r.Context(), in.SessionID)
	if err != nil {
		s.writeStoreError(w, r, http.StatusInternalServerError, fmt.Sprintf("load session %q: %v", in.SessionID, err), err)
		return
	}
	if !s.authorizeRun(w, r, &in) {
		return
	}
	if err := dropEchoes(ai, &in, entries); err != nil {
		writeError(w, http.StatusBadRequest, "invalid RunAgentInput: "+err.Error())
		return
	}
	if s.opts.Dispatch != nil {
		s.dispatchRun(w, r, ai, in, entries)
		return
	}

	// The run ends when its client goes away, on Abort, or on Shutdown.
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	stopOnShutdown := context.AfterFunc(s.runsCtx, func() { cancel(context.Cause(s.runsCtx)) })
	defer stopOnShutdown()

	if s.opts.Extract != nil {
		ctx = s.opts.Extract(ctx, r.Header)
	}
	stream := newSSE(w)
	stream.beforeEnd = release
	tr := newTranslator(in.SessionID, in.RunID)
	tr.Supplied = suppliedResults(in)
	// A run that continues a thread starts with the thread's conversation as stored
	// (MESSAGES_SNAPSHOT), so a client that lost or never had it is in step.
	if len(entries) > 0 {
		tr.Snapshot = threadSnapshot(in.SessionID, entries, ai, in)
	}
	traceID := ""
	res, err := s.opts.Agent.RunWith(ctx, in, func(e loop.Event) {
		traceID = e.TraceID
		for _, ev := range tr.Translate(e) {
			stream.send(ev)
		}
	})
	if s.opts.Log != nil && stream.started {
		s.opts.Log.LogAttrs(r.Context(), slog.LevelInfo, "run finished", slog.String("session", in.SessionID),
			slog.String("run", in.RunID), slog.String("status", string(res.Status)), slog.String("reason", string(res.Reason)),
			slog.Int("prompt_tokens", res.Usage.PromptTokens), slog.Int("completion_tokens", res.Usage.CompletionTokens),
			slog.Float64("cost_usd", res.Usage.CostUSD), slog.String("trace_id", traceID))
	}
	if !stream.started {
		s.notStarted(w, r, in, err)
	} else if err != nil && storeUnavailable(err) && s.opts.Log != nil {
		// The run began and its store failed under it: the client saw RUN_ERROR, and the
		// operator must hear of it too (a deleted database file used to go unnoticed).
		s.opts.Log.LogAttrs(r.Context(), slog.LevelError, "session store unavailable", slog.String("session", in.SessionID),
			slog.String("run", in.RunID), slog.String("error", err.Error()))
	}
}

// notStarted answers a run that was refused before it began (no event was emitted): the
// host's admission (429 with Retry-After: its capacity, or the user's share), the
// request's fault (400), a conflict (409), or the store's (503, writeStoreError).
func (s *Server) notStarted(w http.ResponseWriter, r *http.Request, in loop.RunInput, err error) {
	msg := fmt.Sprintf("run %q not started: %v", in.RunID, err)
	if secs, overloaded := loop.RetryAfterOf(err); overloaded {
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		writeError(w, http.StatusTooManyRequests, msg)
		return
	}
	code := http.StatusBadRequest
	if errors.Is(err, loop.ErrSessionBusy) || errors.Is(err, loop.ErrRunExists) {
		code = http.StatusConflict
	}
	s.writeStoreError(w, r, code, msg, err)
}

// claim registers a run, refusing a second run on a session (409), a run id already
// in use on it (409) and any run while shutting down (503); one map lookup, so a
// thousand runs at once do not make each claim scan the others. Run ids are per session
// everywhere (the loop, the cluster's jobs, aborts): another session's run of the same
// id is another run and is not refused.
func (s *Server) claim(in loop.RunInput) (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return http.StatusServiceUnavailable, "server is shutting down"
	}
	if run, busy := s.active[in.SessionID]; busy {
		if run == in.RunID {
			return http.StatusConflict, fmt.Sprintf("run %q is already in progress", in.RunID)
		}
		return http.StatusConflict, fmt.Sprintf("session %q already has a run in progress (%s); abort it or wait for it to finish", in.SessionID, run)
	}
	s.active[in.SessionID] = in.RunID
	s.wg.Add(1)
	return 0, ""
}

// drainRetryAfter is the Retry-After, in seconds, of a run refused because this node is
// draining: a load balancer has taken it out by then, and the retry reaches another node.
const drainRetryAfter = 1

// writeClaimError answers a refused claim; a draining node's 503 carries Retry-After.
func writeClaimError(w http.ResponseWriter, code int, msg string) {
	if code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(drainRetryAfter))
	}
	writeError(w, code, msg)
}

func (s *Server) release(in loop.RunInput) {
	s.mu.Lock()
	delete(s.active, in.SessionID) // claim admits one run a session
	s.mu.Unlock()
	s.wg.Done()
}

// handleAbort is POST /v1/sessions/{session}/runs/{run}/abort, and POST
// /v1/runs/{run}/abort, which names no session: that one aborts the run id's run only
// when exactly one session has it in progress, and answers 409 asking for the session
// route when several have, since an abort must never reach another session's run.
func (s *Server) handleAbort(w http.ResponseWriter, r *http.Request) {
	session, id := r.PathValue("session"), r.PathValue("run")
	if session == "" {
		sessions, err := s.runSessions(r.Context(), id)
		if err == nil {
			sessions, err = s.readable(r.Context(), sessions)
		}
		if err != nil {
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("abort run %q: %v", id, err))
			return
		}
		switch len(sessions) {
		case 0:
			writeError(w, http.StatusNotFound, fmt.Sprintf("no run %q in progress", id))
			return
		case 1:
			session = sessions[0]
		default:
			writeError(w, http.StatusConflict, fmt.Sprintf("run id %q is in progress on sessions %s; abort it with POST /v1/sessions/{session}/runs/%s/abort",
				id, strings.Join(sessions, ", "), id))
			return
		}
	}
	p, _ := PrincipalFrom(r.Context())
	var stopErr error
	ok, err := s.door().Abort(r.Context(), p, session, id, func(ctx context.Context) (bool, error) {
		ok, err := s.stopRun(ctx, session, id)
		stopErr = err
		return ok, err
	})
	switch {
	case stopErr != nil || (ok && err != nil): // the run's end was not reached, or its record not written
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("abort run %q: %v", id, err))
	case err != nil:
		code, msg, serr := s.refusal(p, access.Write, session, err)
		if serr != nil {
			s.writeStoreError(w, r, code, msg, serr)
		} else {
			writeError(w, code, msg)
		}
	case !ok:
		writeError(w, http.StatusNotFound, fmt.Sprintf("no run %q in progress", id))
	default:
		writeJSON(w, http.StatusAccepted, map[string]any{"runId": id, "aborting": true})
	}
}

// stopRun stops the session's run of that id where it runs: through the cluster's
// dispatcher when there is one, else on this server's own agent. The door (Door.Abort)
// has decided the caller may.
func (s *Server) stopRun(ctx context.Context, session, id string) (bool, error) {
	if s.opts.Dispatch != nil {
		ok, err := s.opts.Dispatch.Abort(ctx, session, id)
		if err != nil || ok {
			return ok, err
		}
	}
	s.mu.Lock()
	run, live := s.active[session]
	live = live && run == id
	s.mu.Unlock()
	return live && s.opts.Agent != nil && s.opts.Agent.Abort(session, id), nil
}

// readable keeps the sessions the caller may read: another user's session with a run of
// the same id is as absent as one that does not exist, and its name is never answered.
func (s *Server) readable(ctx context.Context, sessions []string) ([]string, error) {
	out := sessions[:0:0]
	for _, session := range sessions {
		code, _, err := s.decide(ctx, access.Read, session)
		if err != nil {
			return nil, err
		}
		if code == 0 {
			out = append(out, session)
		}
	}
	return out, nil
}

// runSessions lists the sessions that have a run of the id in progress: on this server,
// and with a Dispatcher, wherever their jobs run.
func (s *Server) runSessions(ctx context.Context, runID string) ([]string, error) {
	var out []string
	if s.opts.Dispatch != nil {
		ss, err := s.opts.Dispatch.Sessions(ctx, runID)
		if err != nil {
			return nil, err
		}
		out = ss
	}
	s.mu.Lock()
	for session, run := range s.active {
		if run == runID {
			out = append(out, session)
		}
	}
	s.mu.Unlock()
	slices.Sort(out)
	return slices.Compact(out), nil
}

// readJSON reads a bounded body and decodes it, answering 413, 408 or 400 itself.
//
// The whole body must arrive within Options.BodyReadTimeout. When reading fails the
// deadline is left in place and the connection is closed after the answer: net/http
// would otherwise try to drain up to 256 KiB of the unread body before answering, and a
// client that stalls would hold the connection (and never see its error) for ever.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.opts.BodyReadTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		w.Header().Set("Connection", "close")
	} else {
		_ = rc.SetReadDeadline(time.Time{})
	}
	var tooBig *http.MaxBytesError
	var netErr net.Error
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", tooBig.Limit))
		return false
	case errors.As(err, &netErr) && netErr.Timeout():
		writeError(w, http.StatusRequestTimeout, fmt.Sprintf("request body not received within %s", s.opts.BodyReadTimeout))
		return false
	case err != nil:
		writeError(w, http.StatusBadRequest, "reading request body: "+err.Error())
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		writeError(w, http.StatusBadRequest, "malformed JSON in request body: "+err.Error())
		return false
	}
	return true
}

// sse writes AG-UI events as Server-Sent Events: one "data: JSON" frame per event.
// Write errors (a client gone) are remembered and later events dropped; the request's
// context, cancelled by net/http, is what stops the run.
type sse struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	err     error
	id      string // the next frames' id (a stored event's seq), when set
	// beforeEnd, when set, is called before a RUN_FINISHED or RUN_ERROR frame is sent.
	beforeEnd func()
}

func newSSE(w http.ResponseWriter) *sse { return &sse{w: w, rc: http.NewResponseController(w)} }

func (s *sse) send(ev aguiEvent) {
	if t := ev.EventType(); s.beforeEnd != nil && (t == aguiRunFinished || t == aguiRunError) {
		s.beforeEnd()
	}
	if s.err != nil {
		return
	}
	if !s.started {
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		s.w.WriteHeader(http.StatusOK)
		s.started = true
	}
	b, err := json.Marshal(ev)
	if err != nil {
		b, _ = json.Marshal(runError{base: base{Type: aguiRunError}, Message: "encode event: " + err.Error(), Code: "internal"})
	}
	buf := make([]byte, 0, len(b)+len(s.id)+12)
	if s.id != "" {
		buf = append(append(append(buf, "id: "...), s.id...), '\n')
	}
	buf = append(append(append(buf, "data: "...), b...), "\n\n"...)
	if _, err := s.w.Write(buf); err != nil {
		s.err = err
		return
	}
	s.err = s.rc.Flush()
}

type releaseKey struct{}

// withRelease carries a run request's claim release to the code that streams it
// (dispatch.go), which hands it to its sse.
func withRelease(ctx context.Context, release func()) context.Context {
	return context.WithValue(ctx, releaseKey{}, release)
}

func releaseOf(ctx context.Context) func() {
	f, _ := ctx.Value(releaseKey{}).(func())
	return f
}
