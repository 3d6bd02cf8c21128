package oidc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/agenthost/agenthost/access"
	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
)

// Config is [auth.oidc] in agent.toml.
type Config struct {
	// Issuer must equal the token's iss claim.
	Issuer string `toml:"issuer"`
	// Audience must be among the token's aud claim (the client id given to agenthost).
	Audience string `toml:"audience"`
	// JWKSFile is a file holding the provider's public keys as a JWK Set; or
	JWKSFile string `toml:"jwks_file"`
	// JWKSURL is where the provider serves them (fetched when a token names a key not
	// yet known, at most once per 30 s, within 10 s and 1 MiB, and cached: jwks.go).
	JWKSURL string `toml:"jwks_url"`
	// UserClaim names the claim that is the user's name; default "sub".
	UserClaim string `toml:"user_claim"`
	// RoleClaim names a claim holding the role (admin, operator, user, viewer); when
	// empty or absent from a token, DefaultRole applies.
	RoleClaim string `toml:"role_claim"`
	// DefaultRole is the role of a token without one; default "user".
	DefaultRole string `toml:"default_role"`
}

// Check validates a configuration, naming the key at fault ("key: message").
func (c Config) Check() error {
	switch {
	case c.Issuer == "":
		return errors.New("issuer: required")
	case c.Audience == "":
		return errors.New("audience: required")
	case (c.JWKSFile == "") == (c.JWKSURL == ""):
		return errors.New("jwks_file: exactly one of jwks_file and jwks_url is required")
	}
	if c.JWKSURL != "" {
		u, err := url.Parse(c.JWKSURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("jwks_url: %q is not an http(s) URL", c.JWKSURL)
		}
	}
	if c.DefaultRole != "" {
		if _, err := access.ParseRole(c.DefaultRole); err != nil {
			return fmt.Errorf("default_role: %w", err)
		}
	}
	return nil
}

// Verifier checks tokens against one Config.
type Verifier struct {
	cfg  Config
	keys gooidc.KeySet
	v    *gooidc.IDTokenVerifier
}

// New builds a Verifier; a relative JWKSFile is relative to dir. The ctx bounds the
// fetches of a JWKS URL for the Verifier's life.
func New(ctx context.Context, cfg Config, dir string) (*Verifier, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if cfg.UserClaim == "" {
		cfg.UserClaim = "sub"
	}
	if cfg.DefaultRole == "" {
		cfg.DefaultRole = string(access.RoleUser)
	}
	var keys gooidc.KeySet
	if cfg.JWKSFile != "" {
		path := cfg.JWKSFile
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		ks, err := readJWKS(path)
		if err != nil {
			return nil, err
		}
		keys = ks
	} else {
		keys = newRemoteKeys(ctx, cfg.JWKSURL)
	}
	names := make([]string, len(algs))
	for i, a := range algs {
		names[i] = string(a)
	}
	return &Verifier{cfg: cfg, keys: keys, v: gooidc.NewVerifier(cfg.Issuer, keys, &gooidc.Config{ClientID: cfg.Audience, SupportedSigningAlgs: names})}, nil
}

func readJWKS(path string) (gooidc.KeySet, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("jwks_file: %w", err)
	}
	if fi.Size() > maxJWKS {
		return nil, fmt.Errorf("jwks_file: %s is %d bytes, more than %d", path, fi.Size(), maxJWKS)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("jwks_file: %w", err)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("jwks_file: %s: %w", path, err)
	}
	ks := &gooidc.StaticKeySet{}
	for _, k := range set.Keys {
		if !k.Valid() || !k.IsPublic() {
			return nil, fmt.Errorf("jwks_file: %s: key %q is not a valid public key", path, k.KeyID)
		}
		ks.PublicKeys = append(ks.PublicKeys, k.Key)
	}
	if len(ks.PublicKeys) == 0 {
		return nil, fmt.Errorf("jwks_file: %s holds no keys", path)
	}
	return ks, nil
}

// Verify checks a token and returns its caller.
func (v *Verifier) Verify(ctx context.Context, token string) (access.Principal, error) {
	tok, err := v.v.Verify(ctx, token)
	if err != nil {
		return access.Principal{}, err
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return access.Principal{}, err
	}
	name, _ := claims[v.cfg.UserClaim].(string)
	if err := access.CheckName(name); err != nil {
		return access.Principal{}, fmt.Errorf("claim %s: %w", v.cfg.UserClaim, err)
	}
	role := v.cfg.DefaultRole
	if v.cfg.RoleClaim != "" {
		if r, ok := claims[v.cfg.RoleClaim]; ok {
			s, _ := r.(string)
			role = s
		}
	}
	rl, err := access.ParseRole(role)
	if err != nil {
		return access.Principal{}, fmt.Errorf("claim %s: %w", v.cfg.RoleClaim, err)
	}
	if tok.Subject == "" {
		return access.Principal{}, errors.New("the token has no subject (sub): it names no identity")
	}
	// The id is the issuer's and subject's (access.OIDCID), never the name claim: a name
	// can be reassigned at the provider, a subject cannot.
	return access.Principal{ID: access.OIDCID(tok.Issuer, tok.Subject), Name: name, Role: rl}, nil
}
