package server

import (
	"fmt"
	"net/http"

	"github.com/agenthost/agenthost/loop"
)

// SessionSummary is one row of GET /v1/sessions.
type SessionSummary = loop.SessionInfo

// handleSessions is GET /v1/sessions: {"sessions": [{id, entries, runs, updated}]}.
func (s *Server) handleSessions(w http.ResponseWriter, r *http.Request) {
	ss, err := loop.ListSessions(r.Context(), s.opts.Store)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "list sessions: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": ss})
}

// SessionDetail is GET /v1/sessions/{id}: the stored entries (messages, compactions and
// events, in order) and the run records.
type SessionDetail struct {
	ID      string           `json:"id"`
	Entries []loop.Entry     `json:"entries"`
	Runs    []loop.RunRecord `json:"runs"`
}

func (s *Server) handleSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	entries, err := s.opts.Store.Load(r.Context(), id)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("load session %q: %v", id, err))
		return
	}
	if len(entries) == 0 {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no session %q", id))
		return
	}
	runs, err := s.opts.Store.Runs(r.Context(), id)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("runs of session %q: %v", id, err))
		return
	}
	if runs == nil {
		runs = []loop.RunRecord{}
	}
	writeJSON(w, http.StatusOK, SessionDetail{ID: id, Entries: entries, Runs: runs})
}
