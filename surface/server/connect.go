package server

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net/http"
	"strings"

	"github.com/agenthost/agenthost/access"
)

// Connector is the door's part for per-user MCP credentials (host.Door has it;
// docs/credentials.md): a user's sign-in to a server reached with each user's own
// account, started by the user and finished by the authorization server's redirect.
// The server holds no token: the door keeps the pending sign-in and the token.
type Connector interface {
	// MCPConnect starts p's sign-in to server name and returns the authorization
	// server's URL; the redirect comes back to callback.
	MCPConnect(ctx context.Context, p access.Principal, name, callback string) (string, error)
	// MCPConnected finishes the sign-in the redirect's state names; it returns the server's name.
	MCPConnected(ctx context.Context, state, code, authErr string) (string, error)
}

// routeConnect serves the per-user sign-in when the door has it:
// GET /v1/mcp/servers/{name}/connect (a user: {"url": …}, or a redirect to it for a
// browser that asks for HTML) and GET /v1/mcp/oauth/callback (the authorization
// server's redirect: no bearer token, the sign-in's state is its credential).
func (s *Server) routeConnect() {
	c, ok := s.opts.Door.(Connector)
	if !ok {
		return
	}
	s.mux.Handle("GET /v1/mcp/servers/{name}/connect", s.auth(s.atLeast(access.RoleUser, func(w http.ResponseWriter, r *http.Request) {
		p, _ := PrincipalFrom(r.Context())
		u, err := c.MCPConnect(r.Context(), p, r.PathValue("name"), callbackURL(r))
		if err != nil {
			writeError(w, connectStatus(err), strings.TrimPrefix(err.Error(), access.ErrNotAllowed.Error()+": "))
			return
		}
		if strings.Contains(r.Header.Get("Accept"), "text/html") {
			http.Redirect(w, r, u, http.StatusSeeOther)
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"url": u})
	})))
	s.mux.HandleFunc("GET /v1/mcp/oauth/callback", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		authErr := q.Get("error")
		if d := q.Get("error_description"); d != "" {
			authErr += ": " + d
		}
		name, err := c.MCPConnected(r.Context(), q.Get("state"), q.Get("code"), authErr)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err != nil {
			w.WriteHeader(connectStatus(err))
			fmt.Fprintf(w, "<p>Not connected: %s</p>\n", html.EscapeString(err.Error()))
			return
		}
		fmt.Fprintf(w, "<p>Connected to %s. You can close this page and resume the run.</p>\n", html.EscapeString(name))
	})
}

// callbackURL is the callback on the address the request came to.
func callbackURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/v1/mcp/oauth/callback"
}

func connectStatus(err error) int {
	switch {
	case errors.Is(err, access.ErrNotVisible):
		return http.StatusNotFound
	case errors.Is(err, access.ErrNotAllowed):
		return http.StatusForbidden
	}
	return http.StatusBadGateway
}
