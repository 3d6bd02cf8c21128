package mcpclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// headerLog records the Authorization header of each request a server got.
type headerLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *headerLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.seen = append(l.seen, r.Header.Get("Authorization"))
		l.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (l *headerLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

func echoServer() http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
}

// redirector answers every request with a 307 to the same path at target.
func redirector(target string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+r.URL.Path, http.StatusTemporaryRedirect)
	})
}

// TestHeadersAreNotSentToARedirectsOtherHost: the configured server redirects (307) to
// another origin (another loopback port); the session works there, but the entry's
// Authorization header reaches only the configured server, never the other one.
func TestHeadersAreNotSentToARedirectsOtherHost(t *testing.T) {
	var first, second headerLog
	other := httptest.NewServer(second.wrap(echoServer()))
	defer other.Close()
	configured := httptest.NewServer(first.wrap(redirector(other.URL)))
	defer configured.Close()

	ctx := context.Background()
	s, err := Start(ctx, Config{Name: "remote", URL: configured.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if res, err := s.Call(ctx, "echo", nil); err != nil || res.Text() != "ok" {
		t.Fatalf("call through the redirect: %+v, %v", res, err)
	}
	if got := first.get(); len(got) == 0 || got[0] != "Bearer s3cret" {
		t.Fatalf("the configured server got %q, want the header", got)
	}
	got := second.get()
	if len(got) == 0 {
		t.Fatal("the redirect was not followed")
	}
	for _, a := range got {
		if a != "" {
			t.Fatalf("the other host got Authorization %q", a)
		}
	}
}

// TestHeadersFollowARedirectOnTheSameOrigin: a redirect within the configured origin
// (another path, the default port written out) keeps the headers.
func TestHeadersFollowARedirectOnTheSameOrigin(t *testing.T) {
	var log headerLog
	mux := http.NewServeMux()
	mux.Handle("/old", http.RedirectHandler("/mcp", http.StatusTemporaryRedirect))
	mux.Handle("/mcp", echoServer())
	hs := httptest.NewServer(log.wrap(mux))
	defer hs.Close()
	ctx := context.Background()
	s, err := Start(ctx, Config{Name: "remote", URL: hs.URL + "/old", Headers: map[string]string{"Authorization": "Bearer s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(log.get()) < 2 {
		t.Fatalf("requests %q: the redirect was not followed", log.get())
	}
	for _, a := range log.get() {
		if a != "Bearer s3cret" {
			t.Fatalf("a request on the configured origin without the header: %q", a)
		}
	}
	for _, tc := range []struct{ a, b string }{{"https://H.example", "https://h.example:443"}, {"http://h", "http://h:80"}} {
		ua, _ := url.Parse(tc.a)
		ub, _ := url.Parse(tc.b)
		if origin(ua) != origin(ub) {
			t.Errorf("origin(%s) = %s, origin(%s) = %s", tc.a, origin(ua), tc.b, origin(ub))
		}
	}
}
