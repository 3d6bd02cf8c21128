package mcpclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// legacyServer is an MCP server of the 2025-03-26 authorization layout on loopback: no
// protected resource metadata; its authorization server metadata at its own origin names
// the issuer issuerPath under that origin (empty: it publishes no metadata, and the
// default endpoints /authorize, /token, /register answer), and /mcp wants the token it
// issued.
type legacyServer struct {
	*httptest.Server
	issuer string // the metadata's issuer; "" for the server's origin + prefix
	prefix string // where the endpoints are
	noMeta bool
	raw    string // the metadata's body instead, when set

	mu   sync.Mutex
	seen []string // the requests, "METHOD path", in order
	form url.Values
}

func newLegacyServer(t *testing.T, prefix string, noMeta bool) *legacyServer {
	s := &legacyServer{prefix: prefix, noMeta: noMeta}
	mcpH := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		return mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, nil)
	}, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		if s.noMeta {
			http.NotFound(w, r)
			return
		}
		if s.raw != "" {
			w.Write([]byte(s.raw))
			return
		}
		iss := s.issuer
		if iss == "" {
			iss = s.URL + s.prefix
		}
		json.NewEncoder(w).Encode(map[string]any{"issuer": iss, "authorization_endpoint": s.URL + s.prefix + "/authorize",
			"token_endpoint": s.URL + s.prefix + "/token", "registration_endpoint": s.URL + s.prefix + "/register",
			"code_challenge_methods_supported": []string{"S256"}, "response_types_supported": []string{"code"}})
	})
	mux.HandleFunc("POST "+prefix+"/register", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"client_id": "legacy-client", "redirect_uris": []string{"http://127.0.0.1:1/callback"}})
	})
	mux.HandleFunc("POST "+prefix+"/token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		s.mu.Lock()
		s.form = r.PostForm
		s.mu.Unlock()
		if r.PostForm.Get("code") != "the-code" || r.PostForm.Get("code_verifier") == "" {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": "legacy-token", "token_type": "Bearer", "expires_in": 3600})
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer legacy-token" {
			w.Header().Set("WWW-Authenticate", `Bearer`)
			http.Error(w, "sign in", http.StatusUnauthorized)
			return
		}
		mcpH.ServeHTTP(w, r)
	})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Method+" "+r.URL.Path)
		s.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// signInTo runs Discover against u; the person's browser is authorize, which gets the
// authorization URL and answers with the code for its state.
func signInTo(t *testing.T, u string, authorized *[]string) (*Grant, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return Discover(ctx, DiscoverConfig{URL: u, RedirectURL: "http://127.0.0.1:1/callback",
		Authorize: func(_ context.Context, authURL string) (url.Values, error) {
			*authorized = append(*authorized, authURL)
			au, err := url.Parse(authURL)
			if err != nil {
				return nil, err
			}
			return url.Values{"code": {"the-code"}, "state": {au.Query().Get("state")}}, nil
		}})
}

// A server of the 2025-03-26 layout (no protected resource metadata): its authorization
// server metadata is read at its own origin even though its issuer has a path there
// (origin/oauth), the client registers, authorizes with PKCE and the resource, and
// exchanges the code at the endpoints that metadata names.
func TestDiscoverReads2025_03_26MetadataAtTheServersOrigin(t *testing.T) {
	s := newLegacyServer(t, "/oauth", false)
	var authorized []string
	g, err := signInTo(t, s.URL+"/mcp", &authorized)
	if err != nil {
		t.Fatalf("sign in: %v\nrequests %v", err, s.seen)
	}
	if g.TokenURL != s.URL+"/oauth/token" || g.ClientID != "legacy-client" || g.Token.AccessToken != "legacy-token" {
		t.Fatalf("grant %+v", g)
	}
	if len(authorized) != 1 {
		t.Fatalf("the person was asked %d times: %v", len(authorized), authorized)
	}
	au, _ := url.Parse(authorized[0])
	q := au.Query()
	if au.Path != "/oauth/authorize" || q.Get("client_id") != "legacy-client" || q.Get("code_challenge_method") != "S256" ||
		q.Get("code_challenge") == "" || q.Get("resource") != s.URL+"/mcp" {
		t.Fatalf("authorization URL %s", authorized[0])
	}
	if s.form.Get("resource") != s.URL+"/mcp" || s.form.Get("grant_type") != "authorization_code" {
		t.Fatalf("token request %v", s.form)
	}
	if !strings.Contains(strings.Join(s.seen, ","), "GET /.well-known/oauth-authorization-server,POST /oauth/register") {
		t.Fatalf("requests %v", s.seen)
	}
}

// Without any metadata, the 2025-03-26 default endpoints at the server's origin are
// used: /register, /authorize, /token.
func TestDiscoverUses2025_03_26DefaultEndpointsWithoutMetadata(t *testing.T) {
	s := newLegacyServer(t, "", true)
	var authorized []string
	g, err := signInTo(t, s.URL+"/mcp", &authorized)
	if err != nil {
		t.Fatalf("sign in: %v\nrequests %v", err, s.seen)
	}
	au, _ := url.Parse(authorized[0])
	if g.TokenURL != s.URL+"/token" || au.Path != "/authorize" || g.ClientID != "legacy-client" {
		t.Fatalf("grant %+v, authorization URL %s", g, authorized[0])
	}
}

// Metadata at the server's origin naming an issuer of another origin is refused: the
// person is never sent to it.
func TestDiscoverRefuses2025_03_26MetadataOfAnotherOrigin(t *testing.T) {
	for _, iss := range []string{"https://auth.example", "http://127.0.0.1:1/oauth", "not a url"} {
		s := newLegacyServer(t, "/oauth", false)
		s.issuer = iss
		var authorized []string
		_, err := signInTo(t, s.URL+"/mcp", &authorized)
		if err == nil || !strings.Contains(err.Error(), "not of that origin") || len(authorized) != 0 {
			t.Fatalf("issuer %q: err %v, person sent to %v", iss, err, authorized)
		}
	}
}

// Hostile metadata at the server's origin (not JSON, endless, without PKCE, with a
// javascript: endpoint) is a clear error; the person is never sent anywhere.
func TestDiscoverRefusesBad2025_03_26Metadata(t *testing.T) {
	for _, c := range []struct{ raw, want string }{
		{`{"issuer": `, "authorization server metadata: unexpected EOF"},
		{`{"issuer":"ORIGIN/oauth","pad":"` + strings.Repeat("x", 2<<20) + `"}`, "authorization server metadata: unexpected EOF"},
		{`{"issuer":"ORIGIN/oauth","authorization_endpoint":"ORIGIN/a","token_endpoint":"ORIGIN/t"}`, "does not support PKCE with S256"},
		{`{"issuer":"ORIGIN","authorization_endpoint":"javascript:alert(1)","token_endpoint":"ORIGIN/t","code_challenge_methods_supported":["S256"]}`,
			`authorization_endpoint "javascript:alert(1)" is not https (or http on loopback)`},
	} {
		s := newLegacyServer(t, "/oauth", false)
		s.raw = strings.ReplaceAll(c.raw, "ORIGIN", s.URL)
		var authorized []string
		_, err := signInTo(t, s.URL+"/mcp", &authorized)
		if err == nil || !strings.Contains(err.Error(), c.want) || len(authorized) != 0 {
			t.Errorf("metadata %.60s: err %v, person sent to %v; want %q", c.raw, err, authorized, c.want)
		}
	}
}
