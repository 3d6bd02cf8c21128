package mcpserver

import (
	"context"
	"net/http"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/host"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Who a call is for. A run or call made over MCP belongs to a user, so that long-term
// memory (recall, remember, preferences) is that user's:
//
//   - over HTTP, the user the request authenticated as (HTTPOptions.Caller: a user's
//     token or a JWT), checked by the server on every request; the SDK then also refuses
//     an MCP session to anyone but the user who opened it;
//   - otherwise, Options.User: over stdio the one user of the process (`mcp serve
//     --user`), over HTTP the user of callers authenticated without a name (the
//     administrator's token, an open loopback server).
//
// The client's own word is never taken: clientInfo, _meta and arguments are whatever the
// client chose to send, so a client could name anyone.

// Options say how New's server serves.
type Options struct {
	// User is who calls with no authenticated user are for ("" is anonymous).
	User string
}

type userKey struct{}

// UserFrom is the user the MCP request being handled is for (identify), "" for none.
func UserFrom(ctx context.Context) string {
	u, _ := ctx.Value(userKey{}).(string)
	return u
}

// identify puts every request's user on its context, for the handlers (UserFrom).
func identify(srv *mcp.Server, fallback string) {
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			return next(context.WithValue(ctx, userKey{}, userOf(req, fallback)), method, req)
		}
	})
}

func userOf(req mcp.Request, fallback string) string {
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil && ex.TokenInfo.UserID != "" {
		return ex.TokenInfo.UserID
	}
	return fallback
}

// authenticated hands the SDK the user a request authenticated as (caller), as token
// information: the SDK binds the MCP session to that user, refusing it to requests of
// anyone else, and passes the user with each request (userOf). A request with no named
// caller goes on as it came.
func authenticated(h http.Handler, caller func(*http.Request) string) http.Handler {
	if caller == nil {
		return h
	}
	bind := auth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: caller(r)}, nil // the server checked the token already
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if caller(r) == "" {
			h.ServeHTTP(w, r)
			return
		}
		bind.ServeHTTP(w, r)
	})
}

// principal is who a request is for, as the host's door takes it: the principal the
// HTTP surface authenticated (mcp serve --http), or the local user the request names
// (UserFrom: an OAuth token's subject, or --user on stdio).
func principal(ctx context.Context, h *host.Host) access.Principal {
	if p, ok := access.PrincipalFrom(ctx); ok {
		return p
	}
	return h.Local(ctx, UserFrom(ctx))
}
