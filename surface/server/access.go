package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/loop"
)

// Who may call, and on which sessions (package access holds the rule):
//
//   - Options.Token is the administrator's token, as it always was;
//   - with Options.Access, a user's token (agenthost users add) authenticates them with
//     their role, and so does a JWT from Options.Verify (OIDC);
//   - with neither a token nor any user, the API is open (a loopback development server):
//     the caller is an anonymous admin. Adding the first user closes it at once.
//
// Every session route goes through onSession or mayAct, and every run the server starts
// through authorize: they ask the host's door (Options.Door, door.go), which holds the
// rule; a session the caller may not read answers 404, as one that does not exist, so
// its id does not leak; one they may read but not change answers 403.

type principalKey struct{}

// PrincipalFrom is the authenticated caller of a request (Routes handlers use it, e.g.
// mcp serve --http to name a tool call's user). ok is false outside an authenticated
// request.
func PrincipalFrom(ctx context.Context) (access.Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(access.Principal)
	return p, ok
}

// actor names the caller in the audit log: a user's id (records add the name as a
// label, audit below), "token" for the administrator's token, "anonymous" on an open
// server.
func actor(ctx context.Context) string {
	p, _ := PrincipalFrom(ctx)
	switch {
	case p.ID != "":
		return p.ID
	case p.Role == access.RoleAdmin && p.Name == "" && ctx.Value(tokenKey{}) != nil:
		return "token"
	}
	return "anonymous"
}

type tokenKey struct{}

// open reports whether the server lets a caller without a token in (as the administrator):
// no administrator token, no users, no OIDC. The A2A card asks for a token exactly when
// it is not open.
func (s *Server) open(ctx context.Context) (bool, error) {
	if s.opts.Token != "" || s.opts.Verify != nil {
		return false, nil
	}
	if s.opts.Access == nil {
		return true, nil
	}
	users, err := s.opts.Access.Users(ctx)
	return err == nil && len(users) == 0, err
}

// authenticate finds the caller, or answers 401 itself.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (context.Context, bool) {
	ctx := r.Context()
	h := r.Header.Get("Authorization")
	tok, hasTok := strings.CutPrefix(h, "Bearer ")
	if h == "" || !hasTok || tok == "" {
		open, err := s.open(ctx)
		if err != nil {
			s.writeStoreError(w, r, http.StatusServiceUnavailable, "authenticate: "+err.Error(), err)
			return nil, false
		}
		if open {
			return context.WithValue(ctx, principalKey{}, access.Principal{Role: access.RoleAdmin}), true
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="agenthost"`)
		refuse(w, r, http.StatusUnauthorized, "missing bearer token: send Authorization: Bearer TOKEN")
		return nil, false
	}
	if s.opts.Token != "" {
		sum := sha256.Sum256([]byte(tok))
		if subtle.ConstantTimeCompare(sum[:], s.token[:]) == 1 {
			ctx = context.WithValue(ctx, tokenKey{}, true)
			return context.WithValue(ctx, principalKey{}, access.Principal{Role: access.RoleAdmin}), true
		}
	}
	if s.opts.Access != nil && strings.HasPrefix(tok, access.TokenPrefix) {
		u, ok, err := s.opts.Access.UserByToken(ctx, access.HashToken(tok))
		if err != nil {
			s.writeStoreError(w, r, http.StatusServiceUnavailable, "authenticate: "+err.Error(), err)
			return nil, false
		}
		if ok {
			return context.WithValue(ctx, principalKey{}, access.Principal{ID: u.ID, Name: u.Name, Role: u.Role}), true
		}
	}
	if s.opts.Verify != nil && strings.Count(tok, ".") == 2 {
		p, err := s.opts.Verify(ctx, tok)
		if err == nil {
			return context.WithValue(ctx, principalKey{}, p), true
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="agenthost", error="invalid_token"`)
		refuse(w, r, http.StatusUnauthorized, "invalid bearer token: "+err.Error())
		return nil, false
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="agenthost", error="invalid_token"`)
	refuse(w, r, http.StatusUnauthorized, "invalid bearer token")
	return nil, false
}

// atLeast wraps a handler that needs a role of at least min.
func (s *Server) atLeast(min access.Role, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if p, _ := PrincipalFrom(r.Context()); !roleAtLeast(p.Role, min) {
			writeError(w, http.StatusForbidden, fmt.Sprintf("%s needs the %s role", r.URL.Path, min))
			return
		}
		next(w, r)
	}
}

func roleAtLeast(have, want access.Role) bool {
	rank := map[access.Role]int{access.RoleAdmin: 4, access.RoleOperator: 3, access.RoleUser: 2, access.RoleViewer: 1}
	return rank[have] >= rank[want]
}

// onSession wraps a route on the session in path value "id" that needs action on it.
func (s *Server) onSession(a access.Action, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.mayAct(w, r, a, r.PathValue("id")) {
			next(w, r)
		}
	}
}

// mayAct answers whether the caller may act on the session, answering 404, 403 or 503
// itself when not.
func (s *Server) mayAct(w http.ResponseWriter, r *http.Request, a access.Action, session string) bool {
	code, msg, err := s.decide(r.Context(), a, session)
	if code == 0 {
		return true
	}
	if err != nil {
		s.writeStoreError(w, r, code, msg, err)
	} else {
		writeError(w, code, msg)
	}
	return false
}

// decide is mayAct without HTTP: 0 when allowed, else the status and why (and the store's
// error when it failed). The decision is the host's door's (Options.Door); this maps it
// to HTTP: 404 for a session the caller may not read, the same as for one that does not
// exist, 403 for one they read but may not change.
func (s *Server) decide(ctx context.Context, a access.Action, session string) (int, string, error) {
	p, _ := PrincipalFrom(ctx)
	return s.refusal(p, a, session, s.door().Authorize(ctx, p, a, session))
}

// refusal maps a door's answer on a session to HTTP (0 when allowed).
func (s *Server) refusal(p access.Principal, a access.Action, session string, err error) (int, string, error) {
	switch {
	case err == nil:
		return 0, "", nil
	case errors.Is(err, access.ErrNotVisible):
		return http.StatusNotFound, fmt.Sprintf("no session %q", session), nil
	case errors.Is(err, access.ErrNotAllowed) && err != access.ErrNotAllowed: // the door's own words
		return http.StatusForbidden, strings.TrimPrefix(err.Error(), access.ErrNotAllowed.Error()+": "), nil
	case errors.Is(err, access.ErrNotAllowed):
		return http.StatusForbidden, fmt.Sprintf("%s may not %s session %q", p.Name, a, session), nil
	default:
		return http.StatusServiceUnavailable, fmt.Sprintf("session %q: %v", session, err), err
	}
}

// authorizeRun decides a POST /v1/runs by the door's admission (authorize), answering
// 404, 403 or 503 itself when refused.
func (s *Server) authorizeRun(w http.ResponseWriter, r *http.Request, in *loop.RunInput) bool {
	code, msg, err := s.authorize(r.Context(), in)
	switch {
	case code == 0:
		return true
	case err != nil:
		s.writeStoreError(w, r, code, msg, err)
	default:
		writeError(w, code, msg)
	}
	return false
}

// authorize is authorizeRun without HTTP, for every surface that starts runs (POST
// /v1/runs, A2A): the door's Admit — who may start runs, whom the run is for (in.User
// becomes their id), the claim of a new session, Write on an existing one, no run in a
// workflow's derived session — mapped to HTTP; 0 when the run may start. It comes
// before the session is read to answer the request, and before a run is handed to a
// cluster worker; the door admits again when the run starts.
func (s *Server) authorize(ctx context.Context, in *loop.RunInput) (int, string, error) {
	p, _ := PrincipalFrom(ctx)
	return s.refusal(p, access.Write, in.SessionID, s.door().Admit(ctx, p, in))
}

// visible filters a listing of sessions to those the caller may read (the door's
// Authorize on each).
func (s *Server) visible(ctx context.Context, ids []string) (map[string]bool, error) {
	if s.opts.Door == nil {
		return nil, nil // nil: everything
	}
	out := map[string]bool{}
	for _, id := range ids {
		code, _, err := s.decide(ctx, access.Read, id)
		if err != nil {
			return nil, err
		}
		out[id] = code == 0
	}
	return out, nil
}

// handleDeleteSession is DELETE /v1/sessions/{id}.
func (s *Server) handleDeleteSession(w http.ResponseWriter, r *http.Request) {
	if s.opts.DeleteSession == nil {
		writeError(w, http.StatusNotImplemented, "this server does not delete sessions")
		return
	}
	id := r.PathValue("id")
	if _, ok := s.load(w, r, id); !ok {
		return
	}
	err := s.opts.DeleteSession(r.Context(), id, actor(r.Context()))
	switch {
	case errors.Is(err, loop.ErrSessionBusy):
		writeError(w, http.StatusConflict, fmt.Sprintf("session %q has a run in progress", id))
		return
	case err != nil:
		s.writeStoreError(w, r, http.StatusInternalServerError, err.Error(), err)
		return
	}
	if s.opts.Access != nil {
		_ = s.opts.Access.ForgetSession(r.Context(), id)
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) accessStore(w http.ResponseWriter) bool {
	if s.opts.Access == nil {
		writeError(w, http.StatusNotImplemented, "this store keeps no users or shares")
	}
	return s.opts.Access != nil
}

// audit records an action of the caller; a failure is logged, not the caller's.
func (s *Server) audit(r *http.Request, rec audit.Record) {
	if s.opts.Audit == nil {
		return
	}
	rec.Actor = actor(r.Context())
	if p, _ := PrincipalFrom(r.Context()); p.Name != "" {
		if rec.Detail == nil {
			rec.Detail = map[string]string{}
		}
		rec.Detail["actor_name"] = p.Name // a label beside the id, as the caller was called then
	}
	if id := audit.RequestID(r.Context()); id != "" {
		if rec.Detail == nil {
			rec.Detail = map[string]string{}
		}
		rec.Detail["request_id"] = id
	}
	if err := s.opts.Audit(r.Context(), rec); err != nil && s.opts.Log != nil {
		s.opts.Log.Error("audit", "action", rec.Action, "error", err)
	}
}

// requestID is the request's X-Request-Id when it is a sane one (1–128 printable ASCII
// characters): it is copied into audit records, so a client cannot write anything there.
func requestID(r *http.Request) string {
	id := r.Header.Get("X-Request-Id")
	if id == "" || len(id) > 128 {
		return ""
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return ""
		}
	}
	return id
}
