package mcpclient

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"

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
	// StepUp, with Source, signs in again for more scope when the server answers 403
	// with a Bearer insufficient_scope challenge (stepup.go): scopes are Granted and the
	// challenge's together; it returns the new token's source. Nil: that answer is the
	// call's error.
	StepUp func(ctx context.Context, req *http.Request, resp *http.Response, scopes []string) (oauth2.TokenSource, error)
	// Granted are the scopes Source's token was asked with.
	Granted []string
	// ScopeLimit, when set, bounds a step-up: a challenge for a scope outside it is
	// refused, not signed in for (the manifest's oauth scopes).
	ScopeLimit []string
}

// oauthTransport adds the grant's token to requests for origin.
type oauthTransport struct {
	origin string
	base   http.RoundTripper
	o      *OAuth // its step-up, if any (stepup.go)

	stepMu sync.Mutex // one step-up at a time
	mu     sync.Mutex
	src    oauth2.TokenSource
	gen    int      // counts the step-ups: a request whose token is older need not sign in again
	scopes []string // granted so far
}

func newOAuthTransport(src oauth2.TokenSource, u *url.URL, base http.RoundTripper, o *OAuth) *oauthTransport {
	t := &oauthTransport{src: src, origin: origin(u), base: base, o: o}
	if o != nil {
		t.scopes = o.Granted
	}
	return t
}

func (t *oauthTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if origin(r.URL) != t.origin {
		return t.base.RoundTrip(r)
	}
	t.mu.Lock()
	src, gen := t.src, t.gen
	t.mu.Unlock()
	resp, err := t.send(r, src)
	if err != nil || resp.StatusCode != http.StatusForbidden || t.o == nil || t.o.StepUp == nil {
		return resp, err
	}
	return t.stepUp(r, resp, gen)
}

// send sends r with src's token.
func (t *oauthTransport) send(r *http.Request, src oauth2.TokenSource) (*http.Response, error) {
	tok, err := src.Token()
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
		return newOAuthTransport(o.Source, u, base, o), nil
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
	return newOAuthTransport(cc.TokenSource(ctx), u, base, nil), nil
}

func loopbackHost(h string) bool {
	return h == "localhost" || h == "127.0.0.1" || h == "::1"
}
