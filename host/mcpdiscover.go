package host

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"

	"github.com/agenthost/agenthost/manifest"
	"github.com/agenthost/agenthost/mcpclient"
)

// discoverLogin signs in to an entry whose oauth table names no endpoint: the endpoints
// are discovered and the client registered as the MCP authorization spec says
// (mcpclient.Discover, on the official SDK). The person opens the printed URL; the
// browser comes back to the loopback listener ln.
func discoverLogin(ctx context.Context, entry manifest.MCPServerConfig, ln net.Listener, redirect string, say func(string)) (*mcpclient.Grant, error) {
	o := entry.OAuth
	var secret string
	if o.ClientSecretEnv != "" {
		if secret = os.Getenv(o.ClientSecretEnv); secret == "" {
			return nil, fmt.Errorf("the client secret's variable %s is not set", o.ClientSecretEnv)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, loginWait)
	defer cancel()
	return mcpclient.Discover(ctx, mcpclient.DiscoverConfig{URL: entry.URL, ClientID: o.ClientID, ClientSecret: secret,
		Scopes: o.Scopes, RedirectURL: redirect,
		Authorize: func(ctx context.Context, authURL string) (url.Values, error) {
			u, err := url.Parse(authURL)
			if err != nil {
				return nil, fmt.Errorf("the authorization URL: %w", err)
			}
			say(authURL)
			return awaitRedirect(ctx, ln, u.Query().Get("state"))
		}})
}
