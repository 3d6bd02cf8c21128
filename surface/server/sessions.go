package server

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/agenthost/agenthost/loop"
)

// sessionSummary is one row of GET /v1/sessions: the store's counts and what a person
// sees of the session (title, last status, cost).
type sessionSummary struct {
	loop.SessionInfo
	loop.SessionSummary
}

// maxListed bounds the sessions GET /v1/sessions reads (most recent first): each is
// loaded to find its title, status and cost.
const maxListed = 500

// handleSessions is GET /v1/sessions[?q=TEXT]: {"sessions": [{id, entries, runs,
// updated, title, last_status, cost_usd}]}, most recent first. q keeps the sessions
// whose id or any message contains it, ignoring case.
func (s *Server) handleSessions(w http.ResponseWriter, r *http.Request) {
	ss, err := loop.ListSessions(r.Context(), s.opts.Store)
	if err != nil {
		s.writeStoreError(w, r, http.StatusInternalServerError, "list sessions: "+err.Error(), err)
		return
	}
	ids := make([]string, len(ss))
	for i, info := range ss {
		ids[i] = info.ID
	}
	may, err := s.visible(r.Context(), ids)
	if err != nil {
		s.writeStoreError(w, r, http.StatusInternalServerError, "list sessions: "+err.Error(), err)
		return
	}
	q := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("q")))
	out := []sessionSummary{}
	for _, info := range ss {
		if len(out) == maxListed {
			break
		}
		if may != nil && !may[info.ID] {
			continue
		}
		es, err := s.opts.Store.Load(r.Context(), info.ID)
		if err != nil {
			s.writeStoreError(w, r, http.StatusInternalServerError, fmt.Sprintf("load session %q: %v", info.ID, err), err)
			return
		}
		sum := loop.Summarize(es, 60)
		if q != "" && !strings.Contains(strings.ToLower(info.ID), q) && !strings.Contains(strings.ToLower(sum.Text), q) {
			continue
		}
		out = append(out, sessionSummary{info, sum})
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": out})
}

// sessionDetail is GET /v1/sessions/{id}: the stored entries (messages, compactions and
// events, in order), the run records, and for a fork its lineage.
type sessionDetail struct {
	ID      string           `json:"id"`
	Entries []loop.Entry     `json:"entries"`
	Runs    []loop.RunRecord `json:"runs"`
	Lineage *loop.Lineage    `json:"lineage,omitempty"`
}

func (s *Server) handleSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	entries, ok := s.load(w, r, id)
	if !ok {
		return
	}
	runs, err := s.opts.Store.Runs(r.Context(), id)
	if err != nil {
		s.writeStoreError(w, r, http.StatusInternalServerError, fmt.Sprintf("runs of session %q: %v", id, err), err)
		return
	}
	if runs == nil {
		runs = []loop.RunRecord{}
	}
	lin, err := s.lineage(r.Context(), id)
	if err != nil {
		s.writeStoreError(w, r, http.StatusInternalServerError, fmt.Sprintf("lineage of session %q: %v", id, err), err)
		return
	}
	writeJSON(w, http.StatusOK, sessionDetail{ID: id, Entries: entries, Runs: runs, Lineage: lin})
}

// handleRunEvents is GET /v1/sessions/{id}/runs/{run}/events: {"events": [...]}, the
// run's stored events (docs/loop.md#events) in order: the raw record of what it did.
func (s *Server) handleRunEvents(w http.ResponseWriter, r *http.Request) {
	id, run := r.PathValue("id"), r.PathValue("run")
	entries, ok := s.load(w, r, id)
	if !ok {
		return
	}
	events := []*loop.Event{}
	for _, e := range entries {
		if e.Kind == loop.EntryEvent && e.Event != nil && e.RunID == run {
			events = append(events, e.Event)
		}
	}
	if len(events) == 0 {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no run %q in session %q", run, id))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"session": id, "run": run, "events": events})
}

// handlePlugins is GET /v1/plugins: {"plugins": Options.Plugins()}.
func (s *Server) handlePlugins(w http.ResponseWriter, _ *http.Request) {
	var list any = []any{}
	if s.opts.Plugins != nil {
		list = s.opts.Plugins()
	}
	writeJSON(w, http.StatusOK, map[string]any{"plugins": list})
}

// load reads a session's entries, answering 404 or 500 itself.
func (s *Server) load(w http.ResponseWriter, r *http.Request, id string) ([]loop.Entry, bool) {
	entries, err := s.opts.Store.Load(r.Context(), id)
	if err != nil {
		s.writeStoreError(w, r, http.StatusInternalServerError, fmt.Sprintf("load session %q: %v", id, err), err)
		return nil, false
	}
	if len(entries) == 0 {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no session %q", id))
		return nil, false
	}
	return entries, true
}
