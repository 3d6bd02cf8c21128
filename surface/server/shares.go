package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/audit"
)

// Sharing a session (docs/users.md#sharing): a share grants a user's id, named by their
// name or id, read or read-and-write on one session.

// shareBody is POST /v1/sessions/{id}/shares.
type shareBody struct {
	User string           `json:"user"`
	Role access.ShareRole `json:"role"`
}

func (s *Server) handleShare(w http.ResponseWriter, r *http.Request) {
	if !s.accessStore(w) {
		return
	}
	var b shareBody
	if !s.readJSON(w, r, &b) {
		return
	}
	sh := access.Share{Session: r.PathValue("id"), User: b.User, Role: b.Role, By: actor(r.Context()), Created: time.Now().UTC()}
	if err := access.CheckShare(sh); err != nil {
		writeError(w, http.StatusBadRequest, "invalid share: "+err.Error())
		return
	}
	grantee, ok := s.userID(w, r, sh.User)
	if !ok {
		return
	}
	sh.User = grantee
	if err := s.opts.Access.PutShare(r.Context(), sh); err != nil {
		s.writeStoreError(w, r, http.StatusInternalServerError, err.Error(), err)
		return
	}
	s.audit(r, audit.Record{Action: audit.ActionSessionShare, Target: sh.Session, Detail: map[string]string{"user": sh.User, "role": string(sh.Role)}})
	writeJSON(w, http.StatusCreated, sh)
}

func (s *Server) handleShares(w http.ResponseWriter, r *http.Request) {
	if !s.accessStore(w) {
		return
	}
	shares, err := s.opts.Access.Shares(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeStoreError(w, r, http.StatusInternalServerError, err.Error(), err)
		return
	}
	owner, _ := s.opts.Access.Owner(r.Context(), r.PathValue("id"))
	writeJSON(w, http.StatusOK, map[string]any{"owner": owner, "shares": shares})
}

func (s *Server) handleUnshare(w http.ResponseWriter, r *http.Request) {
	if !s.accessStore(w) {
		return
	}
	id, user := r.PathValue("id"), r.PathValue("user")
	if !access.IsID(user) { // named by a present user's name: their id
		if u, ok, err := access.Lookup(r.Context(), s.opts.Access, user); err == nil && ok {
			user = u.ID
		}
	}
	err := s.opts.Access.RemoveShare(r.Context(), id, user)
	if errors.Is(err, access.ErrNoSuchShare) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("session %q is not shared with %q", id, user))
		return
	}
	if err != nil {
		s.writeStoreError(w, r, http.StatusInternalServerError, err.Error(), err)
		return
	}
	s.audit(r, audit.Record{Action: audit.ActionSessionUnshare, Target: id, Detail: map[string]string{"user": user}})
	w.WriteHeader(http.StatusNoContent)
}

// userID is the id a share grants to: a present user named name (their id), a present
// user's id, or with OIDC an OIDC id (access.OIDCID: the provider knows its users, not
// the store). A name no one has is refused: the share is to an identity, and a name
// added later is someone new.
func (s *Server) userID(w http.ResponseWriter, r *http.Request, name string) (string, bool) {
	if s.opts.Verify != nil && strings.HasPrefix(name, access.OIDCIDPrefix) && access.IsID(name) {
		return name, true
	}
	users, err := s.opts.Access.Users(r.Context())
	if err != nil {
		s.writeStoreError(w, r, http.StatusInternalServerError, err.Error(), err)
		return "", false
	}
	for _, u := range users {
		if u.Name == name || u.ID == name {
			return u.ID, true
		}
	}
	writeError(w, http.StatusBadRequest, fmt.Sprintf("no user %q (agenthost users add; with OIDC, share with the user's id)", name))
	return "", false
}
