package mcpclient

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// A server of the 2025-03-26 revision of the MCP authorization spec publishes no
// protected resource metadata: the MCP server's origin (its URL without the path) is the
// authorization base URL. Its authorization server metadata is at
// /.well-known/oauth-authorization-server there; a server without it has the default
// endpoints /authorize, /token and /register there. That metadata was not found from an
// issuer, so its issuer cannot be the one the URL was built from (RFC 8414 section 3.3)
// and may carry a path (https://mcp.example/oauth): it is taken when its issuer has the
// MCP server's own origin, and refused otherwise. The SDK's handler refuses such an
// issuer, so signIn runs this flow itself; a server with protected resource metadata
// goes to the SDK's handler.

// legacyProtocol is the revision a 2025-03-26 discovery names (its MCP-Protocol-Version
// header, which that revision asks for).
const legacyProtocol = "2025-03-26"

// signIn is the OAuth handler of a sign-in by discovery.
type signIn struct {
	sdk  *auth.AuthorizationCodeHandler
	c    DiscoverConfig
	hc   *http.Client
	keep func(*oauth2.Config, *oauth2.Token) // the grant a 2025-03-26 sign-in got

	mu      sync.Mutex
	src     oauth2.TokenSource // a 2025-03-26 sign-in's or a machine identity's (machine.go)
	machine bool
}

func (s *signIn) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	s.mu.Lock()
	src := s.src
	s.mu.Unlock()
	if src != nil {
		return src, nil
	}
	return s.sdk.TokenSource(ctx)
}

// Authorize signs in the 2025-03-26 way when the server answers 401 and publishes no
// protected resource metadata, gets a machine identity's token when its authorization
// server takes this client as one only (machine.go), else hands the answer to the SDK's
// handler.
func (s *signIn) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	challenges, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return s.sdk.Authorize(ctx, req, resp)
	}
	if s.hasResourceMetadata(ctx, challenges, req.URL) {
		if asm, prm := s.machineOnly(ctx, challenges, req.URL); asm != nil {
			drain(resp)
			return s.clientCredentials(ctx, asm, prm, challenges)
		}
		return s.sdk.Authorize(ctx, req, resp)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return s.legacy(ctx, req.URL, challenges)
}

// hasResourceMetadata reports whether the server publishes protected resource metadata:
// its challenge names it, or a well-known URL for it answers (valid or not: the SDK's
// handler then checks it and refuses a bad one, never falling back to the old layout).
func (s *signIn) hasResourceMetadata(ctx context.Context, cs []oauthex.Challenge, u *url.URL) bool {
	for _, c := range cs {
		if c.Params["resource_metadata"] != "" {
			return true
		}
	}
	for _, p := range []string{"/.well-known/oauth-protected-resource/" + strings.TrimLeft(u.Path, "/"), "/.well-known/oauth-protected-resource"} {
		resp, err := s.get(ctx, baseURL(u)+p, "")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return true
			}
		}
	}
	return false
}

func (s *signIn) get(ctx context.Context, u, protocol string) (*http.Response, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	r.Header.Set("Accept", "application/json")
	if protocol != "" {
		r.Header.Set("MCP-Protocol-Version", protocol)
	}
	return s.hc.Do(r)
}

// baseURL is u's origin as a URL: the 2025-03-26 authorization base URL.
func baseURL(u *url.URL) string { return u.Scheme + "://" + u.Host }

// legacyMetadata is the authorization server metadata at base, or the default
// endpoints when base publishes none (any 4xx answer).
func (s *signIn) legacyMetadata(ctx context.Context, base string) (*oauthex.AuthServerMeta, error) {
	resp, err := s.get(ctx, base+"/.well-known/oauth-authorization-server", legacyProtocol)
	if err != nil {
		return nil, fmt.Errorf("authorization server metadata: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 4 {
		return &oauthex.AuthServerMeta{Issuer: base, AuthorizationEndpoint: base + "/authorize",
			TokenEndpoint: base + "/token", RegistrationEndpoint: base + "/register"}, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("authorization server metadata: status %d", resp.StatusCode)
	}
	var m oauthex.AuthServerMeta
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&m); err != nil {
		return nil, fmt.Errorf("authorization server metadata: %w", err)
	}
	iu, err := url.Parse(m.Issuer)
	if err != nil || iu.Host == "" || baseURL(iu) != base {
		return nil, fmt.Errorf("authorization server metadata at %s names the issuer %q, not of that origin", base, m.Issuer)
	}
	if !slices.Contains(m.CodeChallengeMethodsSupported, "S256") {
		return nil, fmt.Errorf("the authorization server at %s does not support PKCE with S256", base)
	}
	for _, e := range [][2]string{{"authorization_endpoint", m.AuthorizationEndpoint}, {"token_endpoint", m.TokenEndpoint}, {"registration_endpoint", m.RegistrationEndpoint}} {
		if e[1] == "" && e[0] == "registration_endpoint" {
			continue
		}
		if !httpsOrLoopback(e[1]) {
			return nil, fmt.Errorf("authorization server metadata: %s %q is not https (or http on loopback)", e[0], e[1])
		}
	}
	return &m, nil
}

// legacy runs the authorization code grant with PKCE against the 2025-03-26 layout of
// the server at u.
func (s *signIn) legacy(ctx context.Context, u *url.URL, cs []oauthex.Challenge) error {
	asm, err := s.legacyMetadata(ctx, baseURL(u))
	if err != nil {
		return err
	}
	cfg, err := s.register(ctx, asm)
	if err != nil {
		return err
	}
	cfg.Scopes = s.c.Scopes
	if len(cfg.Scopes) == 0 {
		cfg.Scopes = challengedScopes(cs)
	}
	resource := u.String()
	verifier, state := oauth2.GenerateVerifier(), rand.Text()
	q, err := s.c.Authorize(ctx, cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", resource)))
	switch {
	case err != nil:
		return err
	case q.Get("state") != state:
		return fmt.Errorf("state mismatch")
	case q.Get("iss") != "" && q.Get("iss") != asm.Issuer:
		return fmt.Errorf("authorization response issuer %q does not match expected issuer %q", q.Get("iss"), asm.Issuer)
	}
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, s.hc), q.Get("code"),
		oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", resource))
	if err != nil {
		return fmt.Errorf("token exchange failed: %w", err)
	}
	s.keep(cfg, tok)
	s.mu.Lock()
	s.src = cfg.TokenSource(context.WithValue(context.Background(), oauth2.HTTPClient, s.hc), tok)
	s.mu.Unlock()
	return nil
}

// register is the client at asm, in the SDK handler's order: a client ID metadata
// document when the server takes them, the pre-registered client, else dynamic
// registration.
func (s *signIn) register(ctx context.Context, asm *oauthex.AuthServerMeta) (*oauth2.Config, error) {
	cfg := &oauth2.Config{RedirectURL: s.c.RedirectURL, Endpoint: oauth2.Endpoint{AuthURL: asm.AuthorizationEndpoint, TokenURL: asm.TokenEndpoint}}
	switch kind := clientKindOf(s.c.ClientID); {
	case kind == clientMetadataDocument && asm.ClientIDMetadataDocumentSupported:
		cfg.ClientID = s.c.ClientID
		return cfg, nil
	case kind == clientPreregistered:
		cfg.ClientID, cfg.ClientSecret = s.c.ClientID, s.c.ClientSecret
		cfg.Endpoint.AuthStyle = oauth2.AuthStyleAutoDetect
		for _, m := range []string{"client_secret_post", "client_secret_basic"} {
			if slices.Contains(asm.TokenEndpointAuthMethodsSupported, m) {
				cfg.Endpoint.AuthStyle = authStyleOf(m)
				break
			}
		}
		return cfg, nil
	case asm.RegistrationEndpoint == "":
		return nil, fmt.Errorf("no configured client registration methods are supported by the authorization server")
	}
	reg, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, registrationMetadata(s.c.RedirectURL), s.hc)
	if err != nil {
		return nil, fmt.Errorf("failed to register client: %w", err)
	}
	cfg.ClientID, cfg.ClientSecret, cfg.Endpoint.AuthStyle = reg.ClientID, reg.ClientSecret, authStyleOf(reg.TokenEndpointAuthMethod)
	return cfg, nil
}

func httpsOrLoopback(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Host != "" && (u.Scheme == "https" || (u.Scheme == "http" && loopbackHost(u.Hostname())))
}

// authStyleOf is how a token endpoint auth method sends the client's credentials
// (client_secret_basic when none is named, as RFC 7591 has it).
func authStyleOf(method string) oauth2.AuthStyle {
	switch method {
	case "client_secret_post", "none":
		return oauth2.AuthStyleInParams
	default:
		return oauth2.AuthStyleInHeader
	}
}

// challengedScopes are the scopes a Bearer challenge names.
func challengedScopes(cs []oauthex.Challenge) []string {
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params["scope"] != "" {
			return strings.Fields(c.Params["scope"])
		}
	}
	return nil
}
