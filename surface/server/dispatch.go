package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// Dispatcher hands runs to workers that may be on other nodes (surface/cluster, on River).
// With one, POST /v1/runs enqueues the run and streams its events as they are stored,
// whichever node executes it; aborts go through it too.
type Dispatcher interface {
	// Submit enqueues a run. A run id its session already used (a job exists for the
	// same session and run id) is refused with an error wrapping loop.ErrRunExists, as
	// one atomic decision across nodes.
	Submit(ctx context.Context, in loop.RunInput) error
	// Done reports whether the session's run's job finished for good (it will not be
	// retried). Jobs are keyed by (session, run id), as run ids are unique per session.
	Done(ctx context.Context, session, runID string) (bool, error)
	// Abort cancels the session's run's unfinished job wherever it runs; false when there
	// is none. Another session's run with the same id is not touched.
	Abort(ctx context.Context, session, runID string) (bool, error)
	// Sessions lists the sessions with an unfinished job of the run id: how the abort
	// route that names no session finds its run, or finds the id ambiguous.
	Sessions(ctx context.Context, runID string) ([]string, error)
}

// pollEvery is how often a dispatched run's stream reads the store for new events;
// with a store that can wake it (SessionWatcher), it reads when woken, and every
// watchedPoll in case a wake-up was missed.
const (
	pollEvery   = 40 * time.Millisecond
	watchedPoll = time.Second
)

// storeOutageWait is how long a dispatched run's stream waits for a store that does not
// answer before it ends with RUN_ERROR (code store_unavailable).
var storeOutageWait = 2 * time.Minute

// sessionWatcher is an optional store extension (store/postgres has it, on LISTEN/NOTIFY):
// a channel that receives when entries are appended to a session by any process.
type sessionWatcher interface {
	Watch(ctx context.Context, session string) (<-chan struct{}, func())
}

// ofRun reports whether a stored event belongs to the run (or to a retry of it,
// RUNID~N, after its worker died).
func ofRun(e *loop.Event, runID string) bool {
	return e.RunID == runID || strings.HasPrefix(e.RunID, runID+"~")
}

// streamStored streams a dispatched run's events from the store, after seq `after`,
// until the run ends for good: a run_finished that is not an abort, or an abort once the
// job is done (an abort written for a dead worker's attempt is followed by the retry's
// events instead). Each SSE frame carries the event's seq as its id, so a client can
// resume with Last-Event-ID. A client that goes away stops the stream, not the run.
func (s *Server) streamStored(ctx context.Context, stream *sse, tr *translator, session, runID string, after int64, started bool) {
	st := &storedStream{s: s, stream: stream, tr: tr, session: session, runID: runID, after: after, started: started}
	// A node that drains past its grace ends its streams; the run goes on (its job is
	// River's), and the client picks it up on another node.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.runsCtx, cancel)()
	ended := false // the run's end was sent
	defer func() {
		if !ended && s.runsCtx.Err() != nil {
			st.stream.send(custom{base: base{Type: aguiCustom}, Name: "agenthost.node_draining", Value: map[string]string{
				"message": fmt.Sprintf("this node is shutting down; the run goes on: GET /v1/sessions/%s/runs/%s/stream on another node, with Last-Event-ID %d, picks it up", session, runID, st.after)}})
		}
	}()
	finalPass := false
	var wake <-chan struct{}
	every := pollEvery
	if w, ok := s.opts.Store.(sessionWatcher); ok {
		ch, stop := w.Watch(ctx, session)
		defer stop()
		wake, every = ch, watchedPoll
	}
	for {
		entries, ok := st.load(ctx)
		if !ok {
			return
		}
		progressed, finished := st.forward(entries)
		if finished {
			ended = true
			return
		}
		if finalPass {
			st.final()
			ended = true
			return
		}
		if !progressed { // only a quiet stream asks whether its job has ended
			if done, err := s.opts.Dispatch.Done(ctx, session, runID); err == nil && done {
				finalPass = true
				continue // read once more: what it stored before it ended
			}
		}
		if st.pending != nil && every > pollEvery*5 {
			every = pollEvery * 5 // the job's end is not announced on the session: ask again soon
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-time.After(every):
		}
	}
}

// storedStream is the state of one streamStored: how far it has read, whether the run
// has started, the abort it holds back, and since when the store has not answered.
type storedStream struct {
	s              *Server
	stream         *sse
	tr             *translator
	session, runID string
	after          int64
	started        bool
	pending        *loop.Event // an abort, until the job says whether a retry follows
	outage         time.Time   // since when the store has not answered
}

// load reads the session from the store. While the store is down (a restarting
// database), the run's job waits for it and is retried (surface/cluster), so the stream
// says so and waits too, up to storeOutageWait; false when the stream ends (the client
// went away, or the store stayed down too long).
func (st *storedStream) load(ctx context.Context) ([]loop.Entry, bool) {
	for {
		entries, err := st.s.opts.Store.Load(ctx, st.session)
		if err == nil {
			if !st.outage.IsZero() {
				st.outage = time.Time{}
				st.stream.send(custom{base: base{Type: aguiCustom}, Name: "agenthost.store_available", Value: map[string]string{}})
			}
			return entries, true
		}
		if ctx.Err() != nil {
			return nil, false
		}
		if st.outage.IsZero() {
			st.outage = time.Now()
			st.stream.send(custom{base: base{Type: aguiCustom}, Name: "agenthost.store_unavailable", Value: map[string]string{"message": err.Error()}})
		}
		if time.Since(st.outage) > storeOutageWait {
			st.stream.send(runError{base: base{Type: aguiRunError}, Code: "store_unavailable", Message: fmt.Sprintf(
				"the session store has not answered for %s (%v); the run continues once it is back: GET /v1/sessions/%s/runs/%s/stream with Last-Event-ID %s picks it up",
				storeOutageWait, err, st.session, st.runID, strconv.FormatInt(st.after, 10))})
			return nil, false
		}
		select {
		case <-ctx.Done():
			return nil, false
		case <-time.After(pollEvery * 5): // probing an unreachable store
		}
	}
}

// forward sends the run's events stored after st.after. progressed: there was one;
// finished: the run ended for good (a run_finished that is not an abort), and was sent.
func (st *storedStream) forward(entries []loop.Entry) (progressed, finished bool) {
	for _, en := range entries {
		e := en.Event
		if en.Kind != loop.EntryEvent || e == nil || en.Seq <= st.after || !ofRun(e, st.runID) {
			continue
		}
		st.after, progressed = en.Seq, true
		switch {
		case e.Type == loop.EventRunStarted && st.started:
			st.pending = nil // a retry: the abort before it was a dead attempt's
			continue
		case e.Type == loop.EventRunStarted:
			st.started = true
		case e.Type == loop.EventRunFinished:
			if d, ok := e.Data.(*loop.RunFinishedData); ok && d.Status == loop.StatusAborted {
				st.pending = e
				continue
			}
			st.s.sendStored(st.stream, st.tr, en.Seq, *e)
			return progressed, true
		}
		st.s.sendStored(st.stream, st.tr, en.Seq, *e)
	}
	return progressed, false
}

// final ends the stream once the job had ended before the last read, so everything it
// stored has been read (a run that finished was sent by forward): the held-back abort,
// or, for a run refused before it began (an unknown agent, say), a RUN_ERROR saying so.
func (st *storedStream) final() {
	switch {
	case st.pending != nil:
		st.s.sendStored(st.stream, st.tr, st.pending.Seq, *st.pending)
	case !st.started:
		st.stream.send(runError{base: base{Type: aguiRunError}, Message: fmt.Sprintf("run %q did not start: its job ended without a run_started", st.runID), Code: "not_started"})
	}
}

func (s *Server) sendStored(stream *sse, tr *translator, seq int64, e loop.Event) {
	stream.id = strconv.FormatInt(seq, 10)
	for _, ev := range tr.Translate(e) {
		stream.send(ev)
	}
}

// dispatchRun is POST /v1/runs with a Dispatcher: enqueue, then stream from the store.
// entries is the session as stored before the run.
func (s *Server) dispatchRun(w http.ResponseWriter, r *http.Request, ai RunAgentInput, in loop.RunInput, entries []loop.Entry) {
	ctx := r.Context()
	var after int64
	if n := len(entries); n > 0 {
		after = entries[n-1].Seq
	}
	runs, err := s.opts.Store.Runs(ctx, in.SessionID)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("runs of session %q: %v", in.SessionID, err))
		return
	}
	// Two checks, for two ages of a run id: the stored runs hold every run that started,
	// however old; Submit refuses, atomically, an id whose job exists (the only check
	// that holds when two nodes accept the same run at the same moment).
	used := fmt.Sprintf("run %q not started: the session already has a run with that id", in.RunID)
	for _, r := range runs {
		if ofRun(&loop.Event{RunID: r.ID}, in.RunID) {
			writeError(w, http.StatusConflict, used)
			return
		}
	}
	if err := s.opts.Dispatch.Submit(ctx, in); err != nil {
		if errors.Is(err, loop.ErrRunExists) {
			writeError(w, http.StatusConflict, used)
			return
		}
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	tr := newTranslator(in.SessionID, in.RunID)
	tr.Supplied = suppliedResults(in)
	if len(entries) > 0 {
		tr.Snapshot = threadSnapshot(in.SessionID, entries, ai, in)
	}
	stream := newSSE(w)
	stream.beforeEnd = releaseOf(r.Context())
	s.streamStored(ctx, stream, tr, in.SessionID, in.RunID, after, false)
}

// handleRunStream is GET /v1/sessions/{id}/runs/{run}/stream: a dispatched run's
// events as AG-UI, from the start or after the Last-Event-ID the client sends, until
// the run ends. How a client that lost its connection picks the stream up again.
func (s *Server) handleRunStream(w http.ResponseWriter, r *http.Request) {
	session, run := r.PathValue("id"), r.PathValue("run")
	var after int64
	if h := r.Header.Get("Last-Event-ID"); h != "" {
		n, err := strconv.ParseInt(h, 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("Last-Event-ID %q is not an event seq", h))
			return
		}
		after = n
	}
	if s.opts.Dispatch == nil {
		writeError(w, http.StatusNotFound, "this server runs no dispatched runs (serve --workers)")
		return
	}
	entries, ok := s.load(w, r, session)
	if !ok {
		return
	}
	started := false
	for _, en := range entries {
		if en.Event != nil && ofRun(en.Event, run) && en.Seq <= after && en.Event.Type == loop.EventRunStarted {
			started = true
		}
	}
	s.streamStored(r.Context(), newSSE(w), newTranslator(session, run), session, run, after, started)
}
