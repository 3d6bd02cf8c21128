package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
	"github.com/agenthost/agenthost/mcpclient"
)

// Per-user MCP credentials (auth = "per_user", docs/credentials.md). Each user's token
// is a value of its own in the store's key/value table, keyed by the user's id and the
// server's name, sealed like every stored value when the store has a key; the seal's
// associated data is that key (store/seal.KVAAD), so a token moved to another user's
// row does not open. Nothing else holds it: no event, trace, audit record or model
// message carries a token, only the fact that a user connected.

// userTokensKV holds each user's token for each per-user server (userKey).
const userTokensKV = "agenthost/oauth/users"

// pendingKV holds the sign-ins started through the served host, by their OAuth state:
// whose, which server, the PKCE verifier, until when. Read once.
const pendingKV = "agenthost/oauth/pending"

// catalogKV holds what a per-user server listed when a user last signed in: the tools
// the model sees before any of the run's users has a connection.
const catalogKV = "agenthost/mcp/catalog"

// ActionMCPConnect is the audit record of a user's sign-in to a per-user MCP server.
const ActionMCPConnect = "mcp.connect"

// pendingWait bounds a sign-in started through the served host.
const pendingWait = 15 * time.Minute

// userKey is the key of user's token for server name: the user first, so a user's
// tokens are found (and erased) by prefix.
func userKey(user, name string) string { return user + "\n" + name }

// pendingLogin is a sign-in started through the served host.
type pendingLogin struct {
	User     string    `json:"user"`
	Server   string    `json:"server"`
	Verifier string    `json:"verifier"`
	Redirect string    `json:"redirect"`
	Expires  time.Time `json:"expires"`
}

// userTokenSource is user's token for a per-user entry, refreshed and stored again
// when it expires; mcpclient.ErrNotConnected when the user holds none.
func (h *Host) userTokenSource(ctx context.Context, c manifest.MCPServerConfig, user string) (oauth2.TokenSource, error) {
	src, err := tokenSourceAt(ctx, h.Store, c, userTokensKV, userKey(user, c.Name))
	if errors.Is(err, errNotSignedIn) {
		return nil, mcpclient.ErrNotConnected
	}
	return src, err
}

// loginRequest is what a run asks a user who holds no token for a per-user entry: the
// link that signs them in (through the served host) and the command that does.
func loginRequest(c manifest.MCPServerConfig, user string) loop.InputRequest {
	link := "/v1/mcp/servers/" + c.Name + "/connect"
	if base, ok := strings.CutSuffix(c.OAuth.RedirectURL, callbackPath); ok {
		link = base + link
	}
	return loop.InputRequest{Message: fmt.Sprintf("Connect your account to the MCP server %q to go on: open %s "+
		"(or run `agenthost mcp login %s --user %s`), then resume the run.", c.Name, link, c.Name, user), Connect: link}
}

// callbackPath is where the served host takes the authorization server's redirect.
const callbackPath = "/v1/mcp/oauth/callback"

// perUserEntry is the manifest's per-user entry of that name.
func (h *Host) perUserEntry(name string) (manifest.MCPServerConfig, error) {
	for _, c := range h.Manifest.MCPServers {
		if c.Name == name && c.PerUser() {
			return c, nil
		}
	}
	return manifest.MCPServerConfig{}, fmt.Errorf("%w: no MCP server %q that users connect to (auth = %q)", access.ErrNotVisible, name, manifest.AuthPerUser)
}

// MCPConnect starts p's sign-in to the per-user MCP server name through the served
// host: it keeps the sign-in pending (sealed, read once, for 15 minutes) and returns
// the authorization server's URL, whose redirect comes back to callback (the entry's
// redirect_url when it names one).
func (d *Door) MCPConnect(ctx context.Context, p access.Principal, name, callback string) (string, error) {
	c, err := d.h.perUserEntry(name)
	if err != nil {
		return "", err
	}
	user := identity(p)
	if user == "" {
		return "", fmt.Errorf("%w: a sign-in is for a user, and this caller has no identity", access.ErrNotAllowed)
	}
	if c.OAuth.Discover() {
		return "", fmt.Errorf("mcp server %q discovers its authorization server: sign in with `agenthost mcp login %s --user %s`", name, name, user)
	}
	if c.OAuth.RedirectURL != "" {
		callback = c.OAuth.RedirectURL
	}
	cfg := oauthConfig(c.OAuth, callback)
	verifier, state := oauth2.GenerateVerifier(), randomHex()
	b, _ := json.Marshal(pendingLogin{User: user, Server: name, Verifier: verifier, Redirect: callback, Expires: time.Now().Add(pendingWait)})
	if err := d.h.Store.KVSet(ctx, pendingKV, state, b); err != nil {
		return "", err
	}
	return cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", resourceOf(c))), nil
}

// MCPConnected finishes a sign-in MCPConnect started: the redirect's state names it
// (once: it is forgotten before the code is exchanged), the code is exchanged with its
// PKCE verifier and the token stored for the user who started it. It returns the server's name.
func (d *Door) MCPConnected(ctx context.Context, state, code, authErr string) (string, error) {
	b, ok, err := d.h.Store.KVGet(ctx, pendingKV, state)
	if err != nil {
		return "", err
	}
	if !ok || len(b) == 0 || state == "" {
		return "", fmt.Errorf("%w: no sign-in is waiting for this answer (used, expired or never started)", access.ErrNotAllowed)
	}
	if err := d.h.Store.KVSet(ctx, pendingKV, state, nil); err != nil {
		return "", err
	}
	var pl pendingLogin
	if err := json.Unmarshal(b, &pl); err != nil || time.Now().After(pl.Expires) {
		return "", fmt.Errorf("%w: the sign-in expired; start it again", access.ErrNotAllowed)
	}
	if authErr != "" || code == "" {
		return pl.Server, fmt.Errorf("the authorization server gave no code (%s)", authErr)
	}
	c, err := d.h.perUserEntry(pl.Server)
	if err != nil {
		return pl.Server, err
	}
	hc := context.WithValue(ctx, oauth2.HTTPClient, &http.Client{Timeout: 30 * time.Second})
	tok, err := oauthConfig(c.OAuth, pl.Redirect).Exchange(hc, code, oauth2.VerifierOption(pl.Verifier),
		oauth2.SetAuthURLParam("resource", resourceOf(c)))
	if err != nil {
		return pl.Server, fmt.Errorf("exchange the code: %w", err)
	}
	if err := saveGrantAt(ctx, d.h.Store, userTokensKV, userKey(pl.User, c.Name), storedGrant{Token: tok}); err != nil {
		return pl.Server, err
	}
	return pl.Server, d.h.auditConnect(ctx, pl.User, c.Name, "http")
}

// auditConnect records that user signed in to server (never the token).
func (h *Host) auditConnect(ctx context.Context, user, server, via string) error {
	return h.Audit(ctx, audit.Record{Action: ActionMCPConnect, Actor: actorOf(user), Target: "mcp:" + server, Detail: map[string]string{"via": via}})
}

// saveCatalog keeps the tools a per-user server listed for a user who signed in.
func saveCatalog(ctx context.Context, st loop.SessionStore, name string, tools []mcpclient.Tool) error {
	b, err := json.Marshal(tools)
	if err != nil {
		return err
	}
	return st.KVSet(context.WithoutCancel(ctx), catalogKV, name, b)
}

// loadCatalog is a per-user server's catalogue; an error when no user ever signed in.
func (h *Host) loadCatalog(ctx context.Context, name string) ([]mcpclient.Tool, error) {
	b, ok, err := h.Store.KVGet(ctx, catalogKV, name)
	if err != nil {
		return nil, err
	}
	if !ok || len(b) == 0 {
		return nil, fmt.Errorf("no user has signed in to this per-user server yet, so its tools are unknown: "+
			"run `agenthost mcp login %s --user NAME` once", name)
	}
	var tools []mcpclient.Tool
	if err := json.Unmarshal(b, &tools); err != nil {
		return nil, fmt.Errorf("the stored tool list is not readable: %w", err)
	}
	return tools, nil
}

// listCatalog connects to a per-user entry as user (who just signed in) and keeps the
// tools it lists as the server's catalogue.
func listCatalog(ctx context.Context, st loop.SessionStore, c manifest.MCPServerConfig, user string) error {
	src, err := tokenSourceAt(ctx, st, c, userTokensKV, userKey(user, c.Name))
	if err != nil {
		return err
	}
	srv, err := mcpclient.Start(ctx, mcpclient.Config{Name: c.Name, URL: c.URL, Headers: c.Headers, Timeout: time.Duration(c.Timeout),
		OAuth: &mcpclient.OAuth{Source: src}})
	if err != nil {
		return err
	}
	defer srv.Close()
	return saveCatalog(ctx, st, c.Name, srv.Tools())
}

// resolveUserIn is ResolveUser on a store without a host: a present user's name is their id.
func resolveUserIn(ctx context.Context, st loop.SessionStore, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	if err := loop.CheckUser(name); err != nil {
		return "", err
	}
	return (&Host{Store: st}).ResolveUser(ctx, name)
}

// perUserOf is a per-user entry's connections: its catalogue, each user's token, the
// request that asks a user to sign in. nil for any other entry.
func (h *Host) perUserOf(ctx context.Context, c manifest.MCPServerConfig) (*mcpclient.PerUser, error) {
	if !c.PerUser() {
		return nil, nil
	}
	tools, err := h.loadCatalog(ctx, c.Name)
	if err != nil {
		return nil, err
	}
	return &mcpclient.PerUser{Tools: tools,
		Source: func(ctx context.Context, user string) (oauth2.TokenSource, error) {
			return h.userTokenSource(ctx, c, user)
		},
		Login: func(user string) loop.InputRequest { return loginRequest(c, user) }}, nil
}
