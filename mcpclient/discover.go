package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// Sign-in by discovery, as the MCP authorization spec has it, with the official SDK's
// authorization code handler (auth.AuthorizationCodeHandler): the server's 401 names its
// protected resource metadata (or it is found at the well-known URLs), which names the
// authorization server, whose OAuth or OpenID metadata gives the endpoints; the client
// is registered (a client ID metadata document when the client id is an https URL and
// the server supports them, a pre-registered client id, else dynamic registration); the
// scopes come from the challenge or the metadata; the code is got with PKCE and the
// resource indicator, and exchanged with the token endpoint's auth method
// (client_secret_basic, client_secret_post or none). Two cases are this package's own:
// a server of the 2025-03-26 layout, without protected resource metadata (legacy.go),
// and a machine identity, which gets its token with the client credentials grant
// (machine.go).

// DiscoverConfig is what a sign-in by discovery needs.
type DiscoverConfig struct {
	URL          string   // the MCP server's Streamable HTTP endpoint
	ClientID     string   // "": dynamic registration; an https URL: a client ID metadata document
	ClientSecret string   // of a pre-registered ClientID
	Scopes       []string // requested instead of the discovered ones, when set
	RedirectURL  string   // where the authorization server sends the browser back
	// Authorize shows the person the authorization URL and returns the query of the
	// redirect that comes back (code, state, iss).
	Authorize func(ctx context.Context, authURL string) (url.Values, error)
	Version   string // agenthost's, for the MCP handshake
}

// Grant is what a sign-in got: the token, and what refreshing it needs (the discovered
// token endpoint and the registered client).
type Grant struct {
	Token        *oauth2.Token
	TokenURL     string
	ClientID     string
	ClientSecret string
	AuthStyle    oauth2.AuthStyle
	Scopes       []string // the scopes asked for (what a step-up adds to)
	Grant        string   // "": authorization code; GrantClientCredentials: a machine identity's (machine.go)
}

func newGrant(oc *oauth2.Config, tok *oauth2.Token) *Grant {
	return &Grant{Token: tok, TokenURL: oc.Endpoint.TokenURL, ClientID: oc.ClientID, ClientSecret: oc.ClientSecret,
		AuthStyle: oc.Endpoint.AuthStyle, Scopes: oc.Scopes}
}

// The kinds of client a DiscoverConfig's ClientID names.
const (
	clientDynamic          = iota // "": dynamic registration
	clientMetadataDocument        // an https URL with a path: a client ID metadata document
	clientPreregistered           // anything else
)

func clientKindOf(id string) int {
	switch u, _ := url.Parse(id); {
	case id == "":
		return clientDynamic
	case u != nil && u.Scheme == "https" && u.Path != "" && u.Path != "/":
		return clientMetadataDocument
	}
	return clientPreregistered
}

func registrationMetadata(redirect string) *oauthex.ClientRegistrationMetadata {
	return &oauthex.ClientRegistrationMetadata{ClientName: "agenthost", RedirectURIs: []string{redirect}}
}

// newSignIn is the sign-in handler of c: keep gets each grant it gets.
func newSignIn(c DiscoverConfig, hc *http.Client, keep func(*oauth2.Config, *oauth2.Token)) (*signIn, error) {
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: c.RedirectURL,
		Client:      hc,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			q, err := c.Authorize(ctx, args.URL)
			if err != nil {
				return nil, err
			}
			return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
		},
		NewTokenSource: func(ctx context.Context, oc *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			keep(oc, tok)
			return oc.TokenSource(ctx, tok), nil
		},
	}
	dcr := &auth.DynamicClientRegistrationConfig{Metadata: registrationMetadata(c.RedirectURL)}
	switch clientKindOf(c.ClientID) {
	case clientDynamic:
		cfg.DynamicClientRegistrationConfig = dcr
	case clientMetadataDocument:
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: c.ClientID}
		cfg.DynamicClientRegistrationConfig = dcr // when the server does not take the document
	default:
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: c.ClientID}
		if c.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: c.ClientSecret}
		}
	}
	if len(c.Scopes) > 0 {
		cfg.ScopeFilter = func([]string) []string { return c.Scopes }
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, err
	}
	return &signIn{sdk: h, c: c, hc: hc, keep: keep}, nil
}

// Discover signs in to the server's authorization server by discovery: it opens an MCP
// session with the sign-in handler (the SDK's authorization code handler, or the
// 2025-03-26 layout's flow, legacy.go), which runs the flow when the server answers 401
// (or 403 asking for more scope), and returns the grant.
func Discover(ctx context.Context, c DiscoverConfig) (*Grant, error) {
	var grant *Grant
	hc := &http.Client{Timeout: 30 * time.Second}
	h, err := newSignIn(c, hc, func(oc *oauth2.Config, tok *oauth2.Token) { grant = newGrant(oc, tok) })
	if err != nil {
		return nil, err
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "agenthost", Version: c.Version}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: c.URL, OAuthHandler: h, HTTPClient: hc}, nil)
	if err != nil {
		return nil, fmt.Errorf("sign in to %s: %w", c.URL, err)
	}
	// A server may ask for more scope only when a tool is listed or called (step-up):
	// listing them is part of signing in.
	_, err = cs.ListTools(ctx, nil)
	cs.Close()
	if err != nil {
		return nil, fmt.Errorf("sign in to %s: list tools: %w", c.URL, err)
	}
	if grant == nil {
		return nil, errors.New("the server did not ask to sign in (it answered without a token)")
	}
	if h.isMachine() {
		grant.Grant = GrantClientCredentials
	}
	return grant, nil
}
