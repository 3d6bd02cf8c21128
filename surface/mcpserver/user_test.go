package mcpserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// whoamiServer answers the tool whoami with the user its call is for (UserFrom).
func whoamiServer(fallback string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	identify(srv, fallback)
	srv.AddTool(&mcp.Tool{Name: "whoami", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "<" + UserFrom(ctx) + ">"}}}, nil
		})
	return srv
}

func whoami(t *testing.T, ctx context.Context, tr mcp.Transport) string {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "claims-to-be-root", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// header is one request header; headers sets theirs on every request of a client.
type header struct{ k, v string }

type headers []header

func (hs headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for _, h := range hs {
		r.Header.Set(h.k, h.v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A call is for the caller the HTTP layer authenticated, else for the server's user
// (mcp serve --user); never for the name the client gives itself.
func TestCallsAreForTheAuthenticatedCallerElseTheServersUser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Without HTTP (stdio): the server's user.
	ct, st := mcp.NewInMemoryTransports()
	srv := whoamiServer("ana")
	go func() { _ = srv.Run(ctx, st) }()
	if got := whoami(t, ctx, ct); got != "<ana>" {
		t.Fatalf("stdio: %s", got)
	}
	// Over HTTP: the caller the server authenticated (here, the test's header), else the
	// server's user. The bearer token itself was checked before (surface/server).
	caller := func(r *http.Request) string { return r.Header.Get("X-Test-Caller") }
	hs := httptest.NewServer(HTTPHandler(whoamiServer("ops"), HTTPOptions{Caller: caller}))
	defer hs.Close()
	client := func(rt http.RoundTripper) mcp.Transport {
		return &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: rt}}
	}
	named := headers{{"Authorization", "Bearer t"}, {"X-Test-Caller", "bo"}}
	if got := whoami(t, ctx, client(named)); got != "<bo>" {
		t.Fatalf("http, named caller: %s", got)
	}
	if got := whoami(t, ctx, client(headers{{"Authorization", "Bearer admin"}})); got != "<ops>" {
		t.Fatalf("http, caller without a name: %s", got)
	}
	if got := whoami(t, ctx, client(http.DefaultTransport)); got != "<ops>" {
		t.Fatalf("http, open server: %s", got)
	}
}
