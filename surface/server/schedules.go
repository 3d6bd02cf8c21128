package server

import (
	"net/http"
)

// handleSchedules is GET /v1/schedules (operators and admins: it names the users the
// schedules run as, and their prompts): {"schedules": Options.Schedules(ctx)}, each with
// its next fire.
func (s *Server) handleSchedules(w http.ResponseWriter, r *http.Request) {
	list, err := s.opts.Schedules(r.Context())
	if err != nil {
		s.writeStoreError(w, r, http.StatusInternalServerError, "list schedules: "+err.Error(), err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"schedules": list})
}
