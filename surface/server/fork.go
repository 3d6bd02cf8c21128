package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/loop"
)

// Forker is the door's part in forking and comparing sessions (host.(*Door) is one): it
// decides who may (the caller must read the original; the fork is the caller's), checks
// the edits and records the fork. A door that is not one (a server with no host) answers
// these routes 501.
type Forker interface {
	Fork(ctx context.Context, p access.Principal, req loop.ForkRequest) (string, loop.Lineage, error)
	Compare(ctx context.Context, p access.Principal, a, b string) (loop.Comparison, error)
	Lineage(ctx context.Context, session string) (loop.Lineage, bool, error)
}

// forker is the door as a Forker, answering 501 itself when it is not one.
func (s *Server) forker(w http.ResponseWriter) (Forker, bool) {
	f, ok := s.door().(Forker)
	if !ok {
		writeError(w, http.StatusNotImplemented, "this server cannot fork sessions")
	}
	return f, ok
}

// forkAnswer is POST /v1/sessions/{id}/fork's answer.
type forkAnswer struct {
	Session string       `json:"session"`
	Lineage loop.Lineage `json:"lineage"`
}

// handleFork is POST /v1/sessions/{id}/fork {"at": SEQ, "edits": [{"op", "call_id",
// "content"}]}: 201 {"session", "lineage"}; 404 for a session the caller may not read
// (the same as for none), 400 with the reason for a fork point or an edit the door
// refuses.
func (s *Server) handleFork(w http.ResponseWriter, r *http.Request) {
	f, ok := s.forker(w)
	if !ok {
		return
	}
	var req loop.ForkRequest
	if !s.readJSON(w, r, &req) {
		return
	}
	req.Session = r.PathValue("id")
	p, _ := PrincipalFrom(r.Context())
	id, lin, err := f.Fork(r.Context(), p, req)
	if err != nil {
		s.forkError(w, r, p, req.Session, err)
		return
	}
	writeJSON(w, http.StatusCreated, forkAnswer{Session: id, Lineage: lin})
}

// handleCompare is GET /v1/sessions/{id}/diff/{other}: {"a", "b"}, each side's
// session, from (the entry seq it parts at), messages, runs, tokens and cost_usd.
func (s *Server) handleCompare(w http.ResponseWriter, r *http.Request) {
	f, ok := s.forker(w)
	if !ok {
		return
	}
	a, b := r.PathValue("id"), r.PathValue("other")
	p, _ := PrincipalFrom(r.Context())
	c, err := f.Compare(r.Context(), p, a, b)
	switch {
	case errors.Is(err, loop.ErrUnrelated):
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, access.ErrNotVisible):
		writeError(w, http.StatusNotFound, fmt.Sprintf("no session %q or %q", a, b))
	case err != nil:
		s.forkError(w, r, p, a, err)
	default:
		writeJSON(w, http.StatusOK, c)
	}
}

// forkError maps the door's refusals: 404, 403 (refusal), 400 for an invalid edit, else
// the store's failure.
func (s *Server) forkError(w http.ResponseWriter, r *http.Request, p access.Principal, session string, err error) {
	if errors.Is(err, loop.ErrInvalidEdit) {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	code, msg, serr := s.refusal(p, access.Read, session, err)
	if serr != nil {
		s.writeStoreError(w, r, code, msg, serr)
		return
	}
	writeError(w, code, msg)
}

// lineage is the session's lineage for GET /v1/sessions/{id} (nil when it is no fork, or
// the door keeps none).
func (s *Server) lineage(ctx context.Context, session string) (*loop.Lineage, error) {
	f, ok := s.door().(Forker)
	if !ok {
		return nil, nil
	}
	lin, forked, err := f.Lineage(ctx, session)
	if err != nil || !forked {
		return nil, err
	}
	return &lin, nil
}
