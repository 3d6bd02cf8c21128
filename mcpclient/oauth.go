package mcpclient

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// OAuth for remote servers: with OAuth set, every request to the server's origin carries
// a bearer token got from the token endpoint with the client credentials grant (a
// machine identity: client id and secret), cached in memory and fetched again before it
// expires (golang.org/x/oauth2). The token, like Headers, goes to the server's origin
// only, never to a host a redirect names.

// OAuth is an entry's client credentials.
type OAuth struct {
	TokenURL     string
	ClientID     string
	ClientSecret string
	Scopes       []string
	// Resource, when set, is sent as the RFC 8707 resource parameter (the MCP
	// authorization spec asks clients to name the server they want a token for).
	Resource string
	// Source, when set, gives the tokens instead (a token a person signed in for,
	// refreshed by it): the client credentials fields are then unused.
	Source oauth2.TokenSource
}

// oauthTransport adds the grant's token to requests for origin.
type oauthTransport struct {
	src    oauth2.TokenSource
	origin string
	base   http.RoundTripper
}

func (t oauthTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if origin(r.URL) != t.origin {
		return t.base.RoundTrip(r)
	}
	tok, err := t.src.Token()
	if err != nil {
		return nil, fmt.Errorf("oauth token: %w", err)
	}
	r = r.Clone(r.Context())
	tok.SetAuthHeader(r)
	return t.base.RoundTrip(r)
}

// withOAuth wraps base with the entry's OAuth client credentials, if any.
func (s *Server) withOAuth(base http.RoundTripper, u *url.URL) (http.RoundTripper, error) {
	o := s.cfg.OAuth
	if o == nil {
		return base, nil
	}
	if o.Source != nil {
		return oauthTransport{src: o.Source, origin: origin(u), base: base}, nil
	}
	tu, err := url.Parse(o.TokenURL)
	if err != nil || (tu.Scheme != "https" && !loopbackHost(tu.Hostname())) {
		return nil, fmt.Errorf("mcp server %q: oauth token_url %q must be https (or http on loopback)", s.cfg.Name, o.TokenURL)
	}
	cc := clientcredentials.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, TokenURL: o.TokenURL, Scopes: o.Scopes}
	if o.Resource != "" {
		cc.EndpointParams = url.Values{"resource": {o.Resource}}
	}
	// The token endpoint is asked with a client of its own, not through base (which
	// would add the server's headers to it).
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Transport: http.DefaultTransport})
	return oauthTransport{src: cc.TokenSource(ctx), origin: origin(u), base: base}, nil
}

func loopbackHost(h string) bool {
	return h == "localhost" || h == "127.0.0.1" || h == "::1"
}
