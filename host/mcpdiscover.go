package host

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"

	"golang.org/x/oauth2"

	"github.com/agenthost/agenthost/manifest"
	"github.com/agenthost/agenthost/mcpclient"
)

// discoverLogin signs in to an entry whose oauth table names no endpoint: the endpoints
// are discovered and the client registered as the MCP authorization spec says
// (mcpclient.Discover, on the official SDK). The person opens the printed URL; the
// browser comes back to the loopback listener ln.
func discoverLogin(ctx context.Context, entry manifest.MCPServerConfig, ln net.Listener, redirect string, say func(string)) (*mcpclient.Grant, error) {
	c, err := discoverConfig(entry, ln, redirect, say)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, loginWait)
	defer cancel()
	return mcpclient.Discover(ctx, c)
}

// discoverConfig is the sign-in by discovery of entry, the browser coming back to ln.
func discoverConfig(entry manifest.MCPServerConfig, ln net.Listener, redirect string, say func(string)) (mcpclient.DiscoverConfig, error) {
	o := entry.OAuth
	var secret string
	if o.ClientSecretEnv != "" {
		if secret = os.Getenv(o.ClientSecretEnv); secret == "" {
			return mcpclient.DiscoverConfig{}, fmt.Errorf("the client secret's variable %s is not set", o.ClientSecretEnv)
		}
	}
	return mcpclient.DiscoverConfig{URL: entry.URL, ClientID: o.ClientID, ClientSecret: secret,
		Scopes: o.Scopes, RedirectURL: redirect,
		Authorize: func(ctx context.Context, authURL string) (url.Values, error) {
			u, err := url.Parse(authURL)
			if err != nil {
				return nil, fmt.Errorf("the authorization URL: %w", err)
			}
			say(authURL)
			return awaitRedirect(ctx, ln, u.Query().Get("state"))
		}}, nil
}

func grantOf(g *mcpclient.Grant) storedGrant {
	return storedGrant{Token: g.Token, Discovered: &discovered{TokenURL: g.TokenURL,
		ClientID: g.ClientID, ClientSecret: g.ClientSecret, AuthStyle: g.AuthStyle, Scopes: g.Scopes, Grant: g.Grant}}
}

// withStepUp lets the host's token for a discovered entry c step up (mcpclient's
// stepup.go) when a person can sign in at this host's terminal (Options.OnSignIn): the
// sign-in is the same as `mcp login`'s, for the scopes granted and challenged together,
// never beyond the entry's oauth scopes when it names them; the new grant is stored as
// the server's.
func (h *Host) withStepUp(ctx context.Context, c manifest.MCPServerConfig, o *mcpclient.OAuth) {
	if h.opts.OnSignIn == nil || !c.OAuth.Discover() {
		return
	}
	if b, ok, err := h.Store.KVGet(ctx, oauthKV, c.Name); err == nil && ok {
		var g storedGrant
		if json.Unmarshal(b, &g) == nil && g.Discovered != nil {
			if g.Discovered.Grant == mcpclient.GrantClientCredentials {
				return // no person signs in for a machine identity
			}
			o.Granted = g.Discovered.Scopes
		}
	}
	o.ScopeLimit = c.OAuth.Scopes
	o.StepUp = func(ctx context.Context, req *http.Request, resp *http.Response, scopes []string) (oauth2.TokenSource, error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		entry := c
		oc := *c.OAuth
		oc.Scopes = scopes
		entry.OAuth = &oc
		dc, err := discoverConfig(entry, ln, "http://"+ln.Addr().String()+"/callback", func(u string) { h.opts.OnSignIn(c.Name, scopes, u) })
		if err != nil {
			return nil, err
		}
		g, err := mcpclient.StepUp(ctx, dc, req, resp)
		if err != nil {
			return nil, err
		}
		if err := saveGrantAt(ctx, h.Store, oauthKV, c.Name, grantOf(g)); err != nil {
			return nil, err
		}
		return tokenSourceAt(ctx, h.Store, c, oauthKV, c.Name)
	}
}
