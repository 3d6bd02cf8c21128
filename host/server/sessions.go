package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store"
)

// SessionSummary is one row of GET /v1/sessions.
type SessionSummary = store.SessionInfo

// sessionLister is a store that can list its sessions (store.SQLite).
type sessionLister interface {
	Sessions(ctx context.Context) ([]store.SessionInfo, error)
}

// listSessions lists the store's sessions: with their counts from a SQLite store, by id
// only from a memory store.
func listSessions(ctx context.Context, st loop.SessionStore) ([]SessionSummary, error) {
	switch s := st.(type) {
	case sessionLister:
		return s.Sessions(ctx)
	case *loop.MemoryStore:
		ids := s.Sessions()
		slices.Sort(ids)
		out := make([]SessionSummary, 0, len(ids))
		for _, id := range ids {
			out = append(out, SessionSummary{ID: id})
		}
		return out, nil
	}
	return nil, fmt.Errorf("the session store %T cannot list sessions", st)
}

// handleSessions is GET /v1/sessions: {"sessions": [{id, entries, runs, updated}]}.
func (s *Server) handleSessions(w http.ResponseWriter, r *http.Request) {
	ss, err := listSessions(r.Context(), s.opts.Store)
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
