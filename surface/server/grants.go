package server

import (
	"context"
	_ "embed"
	"errors"
	"net/http"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/loop"
)

// approvalsJS is the console's approval, grant and connect views (web/approvals.js).
//
//go:embed web/approvals.js
var approvalsJS []byte

// grantDoor is the part of the host's door that lists and revokes approval grants
// (docs/approvals.md): who may see or revoke which is the door's decision.
type grantDoor interface {
	Grants(ctx context.Context, p access.Principal) ([]loop.Grant, error)
	RevokeGrant(ctx context.Context, p access.Principal, id string) error
}

func (s *Server) grantDoor(w http.ResponseWriter) (grantDoor, bool) {
	g, ok := s.opts.Door.(grantDoor)
	if !ok {
		writeError(w, http.StatusNotImplemented, "this server keeps no approval grants")
	}
	return g, ok
}

// handleGrants is GET /v1/approvals/grants: the live grants the caller may see (the
// host deletes expired ones as it reads them).
func (s *Server) handleGrants(w http.ResponseWriter, r *http.Request) {
	g, ok := s.grantDoor(w)
	if !ok {
		return
	}
	p, _ := PrincipalFrom(r.Context())
	gs, err := g.Grants(r.Context(), p)
	if err != nil {
		s.writeStoreError(w, r, http.StatusInternalServerError, "grants: "+err.Error(), err)
		return
	}
	if gs == nil {
		gs = []loop.Grant{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"grants": gs})
}

// handleRevokeGrant is DELETE /v1/approvals/grants/{id}: 204, or 404 for a grant the
// caller may not see or that does not exist.
func (s *Server) handleRevokeGrant(w http.ResponseWriter, r *http.Request) {
	g, ok := s.grantDoor(w)
	if !ok {
		return
	}
	p, _ := PrincipalFrom(r.Context())
	switch err := g.RevokeGrant(r.Context(), p, r.PathValue("id")); {
	case errors.Is(err, loop.ErrNoGrant):
		writeError(w, http.StatusNotFound, "no such grant")
	case err != nil:
		s.writeStoreError(w, r, http.StatusInternalServerError, "revoke: "+err.Error(), err)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}
