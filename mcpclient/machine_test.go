package mcpclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// machineServer is an MCP server and its authorization server on loopback whose
// metadata lists grants (grant_types_supported) and client_secret_basic; its token
// endpoint issues a token for client "svc" with secret "s3cret" by the client
// credentials grant, recording each request's form.
func machineServer(t *testing.T, grants ...string) (*httptest.Server, *[]url.Values) {
	var mu sync.Mutex
	var forms []url.Values
	var srv *httptest.Server
	mcpH := echoServer()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"resource": srv.URL + "/mcp", "authorization_servers": []string{srv.URL}, "scopes_supported": []string{"tools"}})
	})
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"issuer": srv.URL, "authorization_endpoint": srv.URL + "/authorize", "token_endpoint": srv.URL + "/token",
			"code_challenge_methods_supported": []string{"S256"}, "grant_types_supported": grants,
			"token_endpoint_auth_methods_supported": []string{"client_secret_basic"}})
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		mu.Lock()
		forms = append(forms, r.PostForm)
		mu.Unlock()
		if id, secret, ok := r.BasicAuth(); !ok || id != "svc" || secret != "s3cret" || r.PostForm.Get("grant_type") != "client_credentials" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			writeJSON(w, map[string]any{"error": "invalid_client"})
			return
		}
		writeJSON(w, map[string]any{"access_token": "machine-token", "token_type": "Bearer", "expires_in": 3600})
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer machine-token" {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, "sign in", http.StatusUnauthorized)
			return
		}
		mcpH.ServeHTTP(w, r)
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &forms
}

func discoverAs(t *testing.T, u, id, secret string) (*Grant, bool, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	asked := false
	g, err := Discover(ctx, DiscoverConfig{URL: u, ClientID: id, ClientSecret: secret, RedirectURL: "http://127.0.0.1:1/callback",
		Authorize: func(context.Context, string) (url.Values, error) { asked = true; return nil, context.Canceled }})
	return g, asked, err
}

// A pre-registered client with a secret, at an authorization server that lists the
// client credentials grant and not the authorization code grant, is a machine identity:
// it gets its token with the client credentials grant (client_secret_basic, the resource
// indicator, the protected resource's scopes) at the discovered token endpoint, and no
// person is asked.
func TestDiscoverGetsAMachineIdentitysTokenByClientCredentials(t *testing.T) {
	srv, forms := machineServer(t, "client_credentials")
	g, asked, err := discoverAs(t, srv.URL+"/mcp", "svc", "s3cret")
	if err != nil || asked {
		t.Fatalf("sign in: %v (person asked: %v)", err, asked)
	}
	if g.Grant != GrantClientCredentials || g.TokenURL != srv.URL+"/token" || g.Token.AccessToken != "machine-token" {
		t.Fatalf("grant %+v", g)
	}
	f := (*forms)[0]
	if f.Get("resource") != srv.URL+"/mcp" || f.Get("scope") != "tools" || f.Get("client_secret") != "" {
		t.Fatalf("token request %v", f)
	}
}

// The grant follows the metadata: a server that also lists the authorization code
// grant is a person's sign-in (the person is asked), a client without a secret never
// tries client credentials, and a wrong secret is the token endpoint's refusal.
func TestDiscoverUsesClientCredentialsOnlyWhenTheServerTakesNothingElse(t *testing.T) {
	both, forms := machineServer(t, "authorization_code", "client_credentials")
	if _, asked, _ := discoverAs(t, both.URL+"/mcp", "svc", "s3cret"); !asked || len(*forms) != 0 {
		t.Fatalf("a server taking the authorization code grant: person asked %v, token requests %v", asked, *forms)
	}
	only, forms := machineServer(t, "client_credentials")
	if _, _, err := discoverAs(t, only.URL+"/mcp", "svc", ""); err == nil || len(*forms) != 0 {
		t.Fatalf("a client without a secret: %v, token requests %v", err, *forms)
	}
	if _, asked, err := discoverAs(t, only.URL+"/mcp", "svc", "wrong"); err == nil || !strings.Contains(err.Error(), "invalid_client") || asked {
		t.Fatalf("a wrong secret: %v (person asked: %v)", err, asked)
	}
}
