package mcpclient

import (
	"context"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// A machine identity found by discovery: a pre-registered client with a secret, at an
// authorization server whose metadata lists the client credentials grant and not the
// authorization code grant (grant_types_supported, RFC 8414), gets its token with the
// client credentials grant: no person signs in. The token endpoint, its auth method
// (client_secret_basic, else client_secret_post), the scopes (the challenge's, else the
// protected resource's scopes_supported, else the entry's) and the resource indicator
// come from the metadata, as for a person's sign-in.

// GrantClientCredentials is Grant.Grant for a machine identity's token.
const GrantClientCredentials = "client_credentials"

// machineOnly is the authorization server metadata of the server at u when it takes
// this client as a machine identity only (and its protected resource metadata), else
// nil.
func (s *signIn) machineOnly(ctx context.Context, cs []oauthex.Challenge, u *url.URL) (*oauthex.AuthServerMeta, *oauthex.ProtectedResourceMetadata) {
	if clientKindOf(s.c.ClientID) != clientPreregistered || s.c.ClientSecret == "" {
		return nil, nil
	}
	var prm *oauthex.ProtectedResourceMetadata
	urls := []string{baseURL(u) + "/.well-known/oauth-protected-resource/" + strings.TrimLeft(u.Path, "/")}
	for _, c := range cs {
		if m := c.Params["resource_metadata"]; m != "" {
			urls = []string{m}
		}
	}
	for _, m := range urls {
		if p, err := oauthex.GetProtectedResourceMetadata(ctx, m, u.String(), s.hc); err == nil && p != nil && len(p.AuthorizationServers) > 0 {
			prm = p
			break
		}
	}
	if prm == nil {
		return nil, nil
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], s.hc)
	if err != nil || asm == nil || !slices.Contains(asm.GrantTypesSupported, GrantClientCredentials) ||
		slices.Contains(asm.GrantTypesSupported, "authorization_code") {
		return nil, nil
	}
	return asm, prm
}

// clientCredentials gets the machine identity's token at asm.
func (s *signIn) clientCredentials(ctx context.Context, asm *oauthex.AuthServerMeta, prm *oauthex.ProtectedResourceMetadata, cs []oauthex.Challenge) error {
	style := oauth2.AuthStyleInHeader
	if m := asm.TokenEndpointAuthMethodsSupported; len(m) > 0 && !slices.Contains(m, "client_secret_basic") {
		style = oauth2.AuthStyleInParams
	}
	scopes := s.c.Scopes
	if len(scopes) == 0 {
		if scopes = challengedScopes(cs); len(scopes) == 0 {
			scopes = prm.ScopesSupported
		}
	}
	cc := clientcredentials.Config{ClientID: s.c.ClientID, ClientSecret: s.c.ClientSecret, TokenURL: asm.TokenEndpoint,
		Scopes: scopes, AuthStyle: style, EndpointParams: url.Values{"resource": {prm.Resource}}}
	src := cc.TokenSource(context.WithValue(context.Background(), oauth2.HTTPClient, s.hc))
	tok, err := src.Token()
	if err != nil {
		return err
	}
	s.keep(&oauth2.Config{ClientID: cc.ClientID, ClientSecret: cc.ClientSecret, Scopes: scopes,
		Endpoint: oauth2.Endpoint{TokenURL: cc.TokenURL, AuthStyle: style}}, tok)
	s.mu.Lock()
	s.src, s.machine = src, true
	s.mu.Unlock()
	return nil
}

// isMachine reports whether the sign-in got a machine identity's token.
func (s *signIn) isMachine() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.machine
}
