package server

import (
	"net/http"
	"time"

	"github.com/agenthost/agenthost/insights"
)

// handleInsights is GET /v1/insights[?since=7d|24h]: the report of `agenthost insights`
// (insights) over the runs that started in the window (default 7 days), as JSON.
func (s *Server) handleInsights(w http.ResponseWriter, r *http.Request) {
	window := 7 * 24 * time.Hour
	if v := r.URL.Query().Get("since"); v != "" {
		d, err := insights.ParseWindow(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, "since "+err.Error())
			return
		}
		window = d
	}
	rep, err := insights.Compute(r.Context(), s.opts.Store, time.Now().Add(-window))
	if err != nil {
		s.writeStoreError(w, r, http.StatusInternalServerError, err.Error(), err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}
