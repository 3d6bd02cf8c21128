package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
	"github.com/agenthost/agenthost/mcpclient"
)

// OAuth with the authorization code grant and PKCE, for a remote MCP server a person
// signs in to: `agenthost mcp login NAME` prints the authorization server's URL, waits
// on a loopback redirect for the code, exchanges it (with the PKCE verifier) and keeps
// the token in the session store's key/value table (namespace agenthost/oauth), sealed
// like every stored value when the store has a key (docs/encryption.md). A host that
// starts the server uses the stored token and refreshes it, storing the new one.

// oauthKV is the store namespace of the MCP servers' tokens; plugins cannot name it
// (names under agenthost/ are the host's).
const oauthKV = "agenthost/oauth"

// loginWait bounds how long `mcp login` waits for the browser to come back.
const loginWait = 5 * time.Minute

// oauthConfig is the OAuth 2 client configuration of an entry's oauth table.
func oauthConfig(o *manifest.MCPOAuthConfig, redirect string) *oauth2.Config {
	c := &oauth2.Config{ClientID: o.ClientID, Scopes: o.Scopes, RedirectURL: redirect,
		Endpoint: oauth2.Endpoint{AuthURL: o.AuthorizeURL, TokenURL: o.TokenURL}}
	if o.ClientSecretEnv != "" {
		c.ClientSecret = os.Getenv(o.ClientSecretEnv)
	}
	return c
}

// MCPLoginAs signs in to an MCP server's authorization server (authorization code with
// PKCE) and stores the token; say prints the URL to open. An entry with auth = "per_user"
// needs user (a user's name or id) and stores the token as theirs alone (usercreds.go),
// then lists the server's tools with it (the catalogue the host offers); any other entry
// refuses one and stores the host's token. defaultUser stands for user when it is empty,
// for a per-user entry only.
func MCPLoginAs(ctx context.Context, path, name, user, defaultUser string, say func(string)) error {
	m, err := manifest.Load(path)
	if err != nil {
		return err
	}
	var entry *manifest.MCPServerConfig
	for i := range m.MCPServers {
		if m.MCPServers[i].Name == name {
			entry = &m.MCPServers[i]
		}
	}
	if entry != nil && entry.PerUser() && user == "" {
		user = defaultUser
	}
	switch {
	case entry == nil || !entry.OAuth.AuthCode():
		return fmt.Errorf("mcp login %s: no [[mcp_servers]] entry %q whose oauth a person signs in to (authorize_url, or no URL: discovered)", name, name)
	case entry.PerUser() && user == "":
		return fmt.Errorf("mcp login %s: the server is reached with each user's own account (auth = %q): name the user with --user", name, manifest.AuthPerUser)
	case !entry.PerUser() && user != "":
		return fmt.Errorf("mcp login %s: --user is for a server with auth = %q; this one has one sign-in for the whole host", name, manifest.AuthPerUser)
	}
	st, err := openStore(ctx, m.Store)
	if err != nil {
		return err
	}
	defer closeStore(st)
	if user, err = resolveUserIn(ctx, st, user); err != nil {
		return err
	}
	g, err := signIn(ctx, *entry, say)
	if err != nil {
		return fmt.Errorf("mcp login %s: %w", name, err)
	}
	if !entry.PerUser() {
		return saveGrantAt(ctx, st, oauthKV, name, g)
	}
	if err := saveGrantAt(ctx, st, userTokensKV, userKey(user, name), g); err != nil {
		return err
	}
	if err := listCatalog(ctx, st, *entry, user); err != nil {
		return fmt.Errorf("mcp login %s: signed in, but listing its tools failed: %w", name, err)
	}
	h := &Host{Store: st}
	return h.auditConnect(ctx, user, name, "cli")
}

// signIn runs the authorization code grant with PKCE over a loopback redirect.
func signIn(ctx context.Context, entry manifest.MCPServerConfig, say func(string)) (storedGrant, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return storedGrant{}, err
	}
	defer ln.Close()
	redirect := "http://" + ln.Addr().String() + "/callback"
	if entry.OAuth.Discover() {
		g, err := discoverLogin(ctx, entry, ln, redirect, say)
		if err != nil {
			return storedGrant{}, err
		}
		return grantOf(g), nil
	}
	cfg := oauthConfig(entry.OAuth, redirect)
	verifier, state := oauth2.GenerateVerifier(), randomHex()
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", resourceOf(entry))}
	say(cfg.AuthCodeURL(state, opts...))
	code, err := awaitCode(ctx, ln, state)
	if err != nil {
		return storedGrant{}, err
	}
	tok, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", resourceOf(entry)))
	if err != nil {
		return storedGrant{}, fmt.Errorf("exchange the code: %w", err)
	}
	return storedGrant{Token: tok}, nil
}

// awaitCode serves the loopback redirect once: the code, if the state matches.
func awaitCode(ctx context.Context, ln net.Listener, state string) (string, error) {
	q, err := awaitRedirect(ctx, ln, state)
	return q.Get("code"), err
}

// awaitRedirect serves the loopback redirect once: its query, if the state matches and
// it carries a code.
func awaitRedirect(ctx context.Context, ln net.Listener, state string) (url.Values, error) {
	type answer struct {
		q   url.Values
		err error
	}
	got := make(chan answer, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		a := answer{q: q}
		switch {
		case r.URL.Path != "/callback":
			http.NotFound(w, r)
			return
		case q.Get("state") != state: // not this login's answer (a forged or stale one): wait on
			http.Error(w, "the redirect's state does not match this login", http.StatusBadRequest)
			return
		case q.Get("error") != "":
			a.err = fmt.Errorf("the authorization server said %s: %s", q.Get("error"), q.Get("error_description"))
		case q.Get("code") == "":
			a.err = errors.New("the redirect carries no code")
		}
		if a.err != nil {
			http.Error(w, a.err.Error(), http.StatusBadRequest)
		} else {
			fmt.Fprintln(w, "Signed in; you can close this page.")
		}
		select {
		case got <- a:
		default:
		}
	})}
	go srv.Serve(ln)
	defer func() {
		// Shutdown, not Close: the handler that sent the answer may not have written its
		// page yet, and the browser would get a closed connection instead.
		sctx, stop := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer stop()
		_ = srv.Shutdown(sctx)
	}()
	ctx, cancel := context.WithTimeout(ctx, loginWait)
	defer cancel()
	select {
	case a := <-got:
		return a.q, a.err
	case <-ctx.Done():
		return url.Values{}, fmt.Errorf("no answer from the browser: %w", ctx.Err())
	}
}

func randomHex() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func resourceOf(c manifest.MCPServerConfig) string {
	if c.OAuth.Resource != "" {
		return c.OAuth.Resource
	}
	return c.URL
}

// storedGrant is what the store keeps per server: the token (its fields at the top
// level, as earlier versions stored it) and, for a sign-in by discovery, the endpoint and
// client that refresh it.
type storedGrant struct {
	*oauth2.Token
	Discovered *discovered `json:"agenthost_discovered,omitempty"`
}

type discovered struct {
	TokenURL     string           `json:"token_url"`
	ClientID     string           `json:"client_id"`
	ClientSecret string           `json:"client_secret,omitempty"`
	AuthStyle    oauth2.AuthStyle `json:"auth_style"`
	Scopes       []string         `json:"scopes,omitempty"` // asked for (what a step-up adds to)
	Grant        string           `json:"grant,omitempty"`  // mcpclient.GrantClientCredentials: a machine identity's
}

func saveGrantAt(ctx context.Context, st loop.SessionStore, ns, key string, g storedGrant) error {
	b, err := json.Marshal(g)
	if err != nil {
		return err
	}
	return st.KVSet(context.WithoutCancel(ctx), ns, key, b)
}

// errNotSignedIn is tokenSourceAt's error when no token is stored.
var errNotSignedIn = errors.New("not signed in")

// storedTokenSource is the token `mcp login` stored for a server, refreshed when it
// expires; a refreshed token is stored again.
func (h *Host) storedTokenSource(ctx context.Context, c manifest.MCPServerConfig) (oauth2.TokenSource, error) {
	src, err := tokenSourceAt(ctx, h.Store, c, oauthKV, c.Name)
	if errors.Is(err, errNotSignedIn) {
		return nil, fmt.Errorf("not signed in: run `agenthost mcp login %s`", c.Name)
	}
	return src, err
}

// tokenSourceAt is the token stored at ns/key for entry c, refreshed when it expires
// and stored again there.
func tokenSourceAt(ctx context.Context, st loop.SessionStore, c manifest.MCPServerConfig, ns, key string) (oauth2.TokenSource, error) {
	b, ok, err := st.KVGet(ctx, ns, key)
	if err != nil {
		return nil, err
	}
	if !ok || len(b) == 0 {
		return nil, errNotSignedIn
	}
	g := storedGrant{Token: &oauth2.Token{}}
	if err := json.Unmarshal(b, &g); err != nil {
		return nil, fmt.Errorf("the stored token is not readable: %w", err)
	}
	cfg := oauthConfig(c.OAuth, "")
	if d := g.Discovered; d != nil {
		cfg = &oauth2.Config{ClientID: d.ClientID, ClientSecret: d.ClientSecret, Endpoint: oauth2.Endpoint{TokenURL: d.TokenURL, AuthStyle: d.AuthStyle}}
	}
	tok := g.Token
	hc := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Transport: http.DefaultTransport, Timeout: 30 * time.Second})
	renew := cfg.TokenSource(hc, tok)
	if d := g.Discovered; d != nil && d.Grant == mcpclient.GrantClientCredentials { // a machine identity: a new grant, no refresh token
		renew = (&clientcredentials.Config{ClientID: d.ClientID, ClientSecret: d.ClientSecret, TokenURL: d.TokenURL, AuthStyle: d.AuthStyle,
			Scopes: d.Scopes, EndpointParams: url.Values{"resource": {resourceOf(c)}}}).TokenSource(hc)
	}
	return &savingSource{src: oauth2.ReuseTokenSource(tok, renew), last: tok.AccessToken,
		save: func(t *oauth2.Token) error {
			return saveGrantAt(context.Background(), st, ns, key, storedGrant{Token: t, Discovered: g.Discovered})
		}}, nil
}

// savingSource stores each new token its source gives (a refresh).
type savingSource struct {
	mu   sync.Mutex
	src  oauth2.TokenSource
	last string
	save func(*oauth2.Token) error
}

func (s *savingSource) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.src.Token()
	if err != nil {
		return nil, err
	}
	if t.AccessToken != s.last {
		s.last = t.AccessToken
		if err := s.save(t); err != nil {
			return nil, fmt.Errorf("store the refreshed token: %w", err)
		}
	}
	return t, nil
}

func closeStore(st loop.SessionStore) {
	if c, ok := st.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}
