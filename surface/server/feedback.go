package server

import (
	"fmt"
	"net/http"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// feedbackBody is POST /v1/sessions/{id}/runs/{run}/feedback's body.
type feedbackBody struct {
	Score   *int   `json:"score"`
	Comment string `json:"comment"`
}

// handleFeedback is POST /v1/sessions/{id}/runs/{run}/feedback: {score, comment} on a
// stored run (-1 or 1 for thumbs, 0 to 5 for a rating). 201 with the feedback as
// stored; 400 for a score out of range, a missing or fractional score, a comment over
// loop.MaxFeedbackComment bytes; 404 for a run the session does not have; 501 for a
// store without feedback.
func (s *Server) handleFeedback(w http.ResponseWriter, r *http.Request) {
	fs, ok := s.opts.Store.(loop.FeedbackStore)
	if !ok {
		writeError(w, http.StatusNotImplemented, "this store keeps no feedback")
		return
	}
	var body feedbackBody
	if !s.readJSON(w, r, &body) {
		return
	}
	if body.Score == nil {
		writeError(w, http.StatusBadRequest, "score is required: -1 (thumbs down), 1 (thumbs up) or a rating from 0 to 5")
		return
	}
	f := loop.Feedback{SessionID: r.PathValue("id"), RunID: r.PathValue("run"), Score: *body.Score, Comment: body.Comment}
	if err := f.Check(); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	entries, err := s.opts.Store.Load(r.Context(), f.SessionID)
	if err != nil {
		s.writeStoreError(w, r, http.StatusInternalServerError, fmt.Sprintf("feedback on run %q: %v", f.RunID, err), err)
		return
	}
	agent, found := loop.RunAgent(entries, f.RunID)
	if !found {
		writeError(w, http.StatusNotFound, fmt.Sprintf("session %q has no run %q", f.SessionID, f.RunID))
		return
	}
	f.Agent, f.Time = agent, time.Now().UTC()
	if err := fs.AddFeedback(r.Context(), f); err != nil {
		s.writeStoreError(w, r, http.StatusInternalServerError, fmt.Sprintf("feedback on run %q: %v", f.RunID, err), err)
		return
	}
	if s.opts.OnFeedback != nil {
		s.opts.OnFeedback(r.Context(), f)
	}
	writeJSON(w, http.StatusCreated, f)
}
