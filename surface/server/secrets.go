package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/agenthost/agenthost/access"
)

// SecretKeeper is the door's part for users' own secrets (host.Door has it;
// docs/credentials.md): each caller sets, lists (names only) and deletes their own.
// A value is never answered back.
type SecretKeeper interface {
	SetSecret(ctx context.Context, p access.Principal, name, value string) error
	DeleteSecret(ctx context.Context, p access.Principal, name string) (bool, error)
	Secrets(ctx context.Context, p access.Principal) ([]string, error)
}

// maxSecretBody bounds PUT /v1/secrets/{name}'s body.
const maxSecretBody = 64 << 10

// routeSecrets serves GET /v1/secrets ({"secrets": [names]}), PUT /v1/secrets/{name}
// ({"value": "…"}: 204) and DELETE /v1/secrets/{name} (204, 404 when none), each on the
// caller's own secrets.
func (s *Server) routeSecrets() {
	k, ok := s.opts.Door.(SecretKeeper)
	if !ok {
		return
	}
	s.mux.Handle("GET /v1/secrets", s.auth(s.atLeast(access.RoleUser, func(w http.ResponseWriter, r *http.Request) {
		p, _ := PrincipalFrom(r.Context())
		names, err := k.Secrets(r.Context(), p)
		if err != nil {
			writeError(w, secretStatus(err), err.Error())
			return
		}
		writeJSON(w, http.StatusOK, map[string][]string{"secrets": names})
	})))
	s.mux.Handle("PUT /v1/secrets/{name}", s.auth(s.atLeast(access.RoleUser, func(w http.ResponseWriter, r *http.Request) {
		p, _ := PrincipalFrom(r.Context())
		var body struct {
			Value string `json:"value"`
		}
		dec := json.NewDecoder(io.LimitReader(r.Body, maxSecretBody))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil {
			writeError(w, http.StatusBadRequest, `the body is {"value": "…"}`)
			return
		}
		if err := k.SetSecret(r.Context(), p, r.PathValue("name"), body.Value); err != nil {
			writeError(w, secretStatus(err), strings.TrimPrefix(err.Error(), access.ErrNotAllowed.Error()+": "))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})))
	s.mux.Handle("DELETE /v1/secrets/{name}", s.auth(s.atLeast(access.RoleUser, func(w http.ResponseWriter, r *http.Request) {
		p, _ := PrincipalFrom(r.Context())
		found, err := k.DeleteSecret(r.Context(), p, r.PathValue("name"))
		switch {
		case err != nil:
			writeError(w, secretStatus(err), err.Error())
		case !found:
			writeError(w, http.StatusNotFound, "no secret "+r.PathValue("name"))
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	})))
}

func secretStatus(err error) int {
	if errors.Is(err, access.ErrNotAllowed) {
		return http.StatusForbidden
	}
	var bad interface{ BadRequest() bool }
	if errors.As(err, &bad) && bad.BadRequest() { // the door's refusal of a name or value
		return http.StatusBadRequest
	}
	return http.StatusServiceUnavailable
}
