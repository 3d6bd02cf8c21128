package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// scopedServer is an MCP server and its authorization server on one loopback origin
// (protected resource metadata, authorization server metadata, registration, an
// authorization endpoint that grants the scopes asked, a token endpoint): listing tools
// needs scope "basic", calling one needs basic and each of callNeeds, else 403
// insufficient_scope naming them.
type scopedServer struct {
	*httptest.Server
	callNeeds []string
	refuse    bool // tools/call: 403 insufficient_scope whatever the token

	mu      sync.Mutex
	asked   []string            // the scope of each authorization request
	granted map[string][]string // code or token → scopes
	calls   int                 // tools/call requests that reached the server
}

func newScopedServer(t *testing.T, callNeeds ...string) *scopedServer {
	s := &scopedServer{callNeeds: callNeeds, granted: map[string][]string{}}
	mcpH := echoServer()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"resource": s.URL + "/mcp", "authorization_servers": []string{s.URL}, "scopes_supported": []string{"basic"}})
	})
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"issuer": s.URL, "authorization_endpoint": s.URL + "/authorize", "token_endpoint": s.URL + "/token",
			"registration_endpoint": s.URL + "/register", "code_challenge_methods_supported": []string{"S256"},
			"response_types_supported": []string{"code"}, "token_endpoint_auth_methods_supported": []string{"none"}})
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		writeJSON(w, map[string]any{"client_id": "c", "token_endpoint_auth_method": "none"})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		s.mu.Lock()
		// A scope parameter is a set (RFC 6749, 3.3): the SDK may order it either way.
		scope := strings.Fields(q.Get("scope"))
		slices.Sort(scope)
		s.asked = append(s.asked, strings.Join(scope, " "))
		code := fmt.Sprintf("code-%d", len(s.asked))
		s.granted[code] = strings.Fields(q.Get("scope"))
		s.mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?"+url.Values{"code": {code}, "state": {q.Get("state")}}.Encode(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		s.mu.Lock()
		scopes, ok := s.granted[r.PostForm.Get("code")]
		tok := "tok-" + r.PostForm.Get("code")
		s.granted[tok] = scopes
		s.mu.Unlock()
		if !ok {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		writeJSON(w, map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct{ Method string }
		_ = json.Unmarshal(body, &msg)
		if r.Method != http.MethodPost || msg.Method == "initialize" || strings.HasPrefix(msg.Method, "notifications/") {
			mcpH.ServeHTTP(w, r)
			return
		}
		need := []string{"basic"}
		s.mu.Lock()
		if msg.Method == "tools/call" {
			need = append(need, s.callNeeds...)
			s.calls++
		}
		refuse := s.refuse && msg.Method == "tools/call"
		have, ok := s.granted[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		s.mu.Unlock()
		challenge := fmt.Sprintf(`Bearer scope=%q, resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, strings.Join(need, " "), s.URL)
		switch {
		case !ok:
			w.Header().Set("WWW-Authenticate", challenge)
			http.Error(w, "sign in", http.StatusUnauthorized)
		case refuse || slices.ContainsFunc(need, func(n string) bool { return !slices.Contains(have, n) }):
			w.Header().Set("WWW-Authenticate", challenge+`, error="insufficient_scope"`)
			http.Error(w, "more scope", http.StatusForbidden)
		default:
			mcpH.ServeHTTP(w, r)
		}
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// browser is the person's browser: it opens the authorization URL and returns the query
// of the redirect it is sent to.
func browser(ctx context.Context, authURL string) (url.Values, error) {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return nil, err
	}
	return loc.Query(), nil
}

// startSignedIn signs in to s by discovery (scope basic), then starts a client on the
// grant whose step-up signs in by discovery again, counting the step-ups.
func startSignedIn(t *testing.T, s *scopedServer, limit []string, stepUps *int) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dc := DiscoverConfig{URL: s.URL + "/mcp", RedirectURL: "http://127.0.0.1:1/callback", Authorize: browser}
	g, err := Discover(ctx, dc)
	if err != nil {
		t.Fatalf("sign in: %v", err)
	}
	var mu sync.Mutex
	o := &OAuth{Source: oauth2.StaticTokenSource(g.Token), Granted: g.Scopes, ScopeLimit: limit,
		StepUp: func(ctx context.Context, req *http.Request, resp *http.Response, scopes []string) (oauth2.TokenSource, error) {
			mu.Lock()
			*stepUps++
			mu.Unlock()
			c := dc
			c.Scopes = scopes
			g, err := StepUp(ctx, c, req, resp)
			if err != nil {
				return nil, err
			}
			return oauth2.StaticTokenSource(g.Token), nil
		}}
	srv, err := Start(ctx, Config{Name: "scoped", URL: s.URL + "/mcp", Timeout: 20 * time.Second, MaxOutput: DefaultMaxOutput, OAuth: o})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// A call the server answers 403 insufficient_scope signs in again once, for the scopes
// granted and those challenged together, and is sent again with the new token; calls
// after it (four at once) use that token without signing in again.
func TestStepUpSignsInAgainForTheUnionOfScopesOnce(t *testing.T) {
	s := newScopedServer(t, "write")
	var stepUps int
	srv := startSignedIn(t, s, nil, &stepUps)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := srv.Call(context.Background(), "echo", nil)
			if err == nil && (res.IsError || res.Text() != "ok") {
				err = fmt.Errorf("result %+v", res)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("call: %v", err)
		}
	}
	if _, err := srv.Call(context.Background(), "echo", nil); err != nil {
		t.Fatal(err)
	}
	if stepUps != 1 || !slices.Equal(s.asked, []string{"basic", "basic write"}) {
		t.Fatalf("step-ups %d, authorization requests' scopes %q; want one step-up asking %q", stepUps, s.asked, "basic write")
	}
}

// A server that asks for more scope again after the step-up gets one step-up per
// request, never a loop: the call fails with its answer.
func TestStepUpIsOncePerRequest(t *testing.T) {
	s := newScopedServer(t, "write")
	var stepUps int
	srv := startSignedIn(t, s, nil, &stepUps)
	s.mu.Lock()
	s.refuse = true // whatever the token's scopes
	s.mu.Unlock()
	res, err := srv.Call(context.Background(), "echo", nil)
	if err == nil && !res.IsError {
		t.Fatalf("a call the server always refuses succeeded: %+v", res)
	}
	if stepUps != 1 || s.calls != 2 {
		t.Fatalf("step-ups %d, tools/call requests %d; want 1 and 2 (one step-up, one retry)", stepUps, s.calls)
	}
}

// A challenge for a scope outside the entry's own scopes is refused without signing in.
func TestStepUpNeverWidensBeyondTheEntrysScopes(t *testing.T) {
	s := newScopedServer(t, "admin")
	var stepUps int
	srv := startSignedIn(t, s, []string{"basic", "write"}, &stepUps)
	res, err := srv.Call(context.Background(), "echo", nil)
	msg := fmt.Sprint(err) + res.Text()
	if stepUps != 0 || len(s.asked) != 1 || !strings.Contains(msg, `the server asks for scope "admin", which the entry's oauth scopes (basic write) do not include`) {
		t.Fatalf("step-ups %d, authorizations %q, call: %s", stepUps, s.asked, msg)
	}
}
