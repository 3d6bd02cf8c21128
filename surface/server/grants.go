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
// host deletes expired ones as it reads them), each with the names of its users
// (grantView).
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
	writeJSON(w, http.StatusOK, map[string]any{"grants": s.grantViews(r.Context(), gs)})
}

// grantView is a grant as GET /v1/approvals/grants lists it: the grant (its user and
// giver as ids, as it is kept) with the names of the user it is for and of who gave
// it, when they are users the server knows (Options.Access). A name is the user's
// name now; a user since removed, a caller known by a name only (a label, an OIDC
// subject the store does not keep) or a server without users has none, and the console
// shows the id.
type grantView struct {
	loop.Grant
	UserName string `json:"user_name,omitempty"`
	ByName   string `json:"by_name,omitempty"`
}

// grantViews names the users of gs. The names are a label: a user list that cannot be
// read leaves them out rather than fail the listing.
func (s *Server) grantViews(ctx context.Context, gs []loop.Grant) []grantView {
	var names map[string]string
	if len(gs) > 0 {
		names = access.Names(ctx, s.opts.Access)
	}
	out := make([]grantView, len(gs))
	for i, g := range gs {
		out[i] = grantView{Grant: g, UserName: names[g.User], ByName: names[g.By]}
	}
	return out
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
