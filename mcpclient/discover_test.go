package mcpclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Signing in by discovery fails with a clear error, never a hang, when the server asks for
// no sign-in (nothing to store), and when it answers 401 but publishes no metadata (the
// 2025-03-26 fallback to the server's own origin finds no registration endpoint either);
// the person is never sent anywhere.
func TestDiscoverRefusesAServerWithNothingToSignInTo(t *testing.T) {
	open := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		return mcp.NewServer(&mcp.Implementation{Name: "open", Version: "1"}, nil)
	}, nil)
	openSrv := httptest.NewServer(open)
	defer openSrv.Close()
	closedSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer`)
		http.Error(w, "sign in", http.StatusUnauthorized)
	}))
	defer closedSrv.Close()
	for _, c := range []struct{ url, want string }{
		{openSrv.URL, "the server did not ask to sign in"},
		{closedSrv.URL, "failed to register client: registration failed with status 401"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		asked := false
		_, err := Discover(ctx, DiscoverConfig{URL: c.url, RedirectURL: "http://127.0.0.1:1/callback",
			Authorize: func(context.Context, string) (url.Values, error) { asked = true; return nil, context.Canceled }})
		cancel()
		if err == nil || !strings.Contains(err.Error(), c.want) || asked {
			t.Errorf("%s: err %v (asked the person: %v), want %q", c.url, err, asked, c.want)
		}
	}
}
