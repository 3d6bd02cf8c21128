package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// tokenServer is a local OAuth authorization server's token endpoint (client
// credentials grant): it checks the client's id and secret and the resource parameter,
// and issues short-lived tokens, each new.
type tokenServer struct {
	mu     sync.Mutex
	issued []string
	bad    []string
}

func (ts *tokenServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, secret, _ := r.BasicAuth()
	_ = r.ParseForm()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if id != "agent" || secret != "s3cret" || r.Form.Get("grant_type") != "client_credentials" || r.Form.Get("resource") != "https://tools.example/mcp" || r.Form.Get("scope") != "tools:call" {
		ts.bad = append(ts.bad, fmt.Sprintf("%s:%s %v", id, secret, r.Form))
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":"invalid_client"}`)
		return
	}
	tok := fmt.Sprintf("tok-%d", len(ts.issued)+1)
	ts.issued = append(ts.issued, tok)
	w.Header().Set("Content-Type", "application/json")
	// expires_in 1: within oauth2's expiry margin, so each use asks for a fresh one.
	json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 1})
}

func (ts *tokenServer) valid(tok string) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, t := range ts.issued {
		if "Bearer "+t == tok {
			return true
		}
	}
	return false
}

// A remote server behind OAuth: the client gets its token with the client credentials
// grant (id, secret, scope and resource as configured), sends it to the server only, and
// gets a new one when it expires; wrong credentials fail the start with the
// authorization server's refusal.
func TestOAuthClientCredentialsGetAndRenewTheServersToken(t *testing.T) {
	ts := &tokenServer{}
	auth := httptest.NewServer(ts)
	defer auth.Close()
	var log headerLog
	echo := echoServer()
	guarded := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ts.valid(r.Header.Get("Authorization")) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		echo.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(log.wrap(guarded))
	defer srv.Close()
	cfg := Config{Name: "remote", URL: srv.URL, Timeout: 10 * time.Second, MaxOutput: DefaultMaxOutput,
		OAuth: &OAuth{TokenURL: auth.URL, ClientID: "agent", ClientSecret: "s3cret", Scopes: []string{"tools:call"}, Resource: "https://tools.example/mcp"}}
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start: %v (token server refused %v)", err, ts.bad)
	}
	defer s.Close()
	for i := 0; i < 2; i++ {
		res, err := s.Call(context.Background(), "echo", nil)
		if err != nil || res.IsError || res.Text() != "ok" {
			t.Fatalf("call %d: %v %+v", i, err, res)
		}
	}
	seen := log.get()
	if len(ts.issued) < 2 || len(ts.bad) != 0 {
		t.Fatalf("tokens issued %v (refused %v): a short-lived token must be renewed", ts.issued, ts.bad)
	}
	for _, h := range seen {
		if !strings.HasPrefix(h, "Bearer tok-") {
			t.Fatalf("a request reached the server with Authorization %q", h)
		}
	}
	cfg.OAuth.ClientSecret = "wrong"
	if _, err := Start(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "invalid_client") {
		t.Fatalf("wrong credentials: %v", err)
	}
	cfg.OAuth.TokenURL = "http://auth.example/token"
	if _, err := Start(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "must be https (or http on loopback)") {
		t.Fatalf("plain http to a remote token endpoint: %v", err)
	}
}
