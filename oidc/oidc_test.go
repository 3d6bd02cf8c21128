package oidc_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/oidc"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

const issuer, audience = "https://idp.test", "agenthost"

type idp struct {
	key  *ecdsa.PrivateKey
	jwks []byte
}

func newIDP(t *testing.T) *idp {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	if err != nil {
		t.Fatal(err)
	}
	return &idp{key: k, jwks: b}
}

// Sign makes a token with the standard claims and extra ones; mod changes them first.
func (p *idp) sign(t *testing.T, extra map[string]any, mod func(*jwt.Claims)) string {
	t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: p.key}, (&jose.SignerOptions{}).WithHeader("kid", "k1").WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	c := jwt.Claims{Issuer: issuer, Subject: "ana", Audience: jwt.Audience{audience}, Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour)), IssuedAt: jwt.NewNumericDate(time.Now())}
	if mod != nil {
		mod(&c)
	}
	tok, err := jwt.Signed(sig).Claims(c).Claims(extra).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func fileVerifier(t *testing.T, p *idp, cfg oidc.Config) *oidc.Verifier {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "jwks.json"), p.jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Issuer, cfg.Audience, cfg.JWKSFile = issuer, audience, "jwks.json"
	v, err := oidc.New(context.Background(), cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestValidTokenNamesTheCallerAndTheirRole(t *testing.T) {
	p := newIDP(t)
	v := fileVerifier(t, p, oidc.Config{UserClaim: "email", RoleClaim: "agenthost_role"})
	got, err := v.Verify(context.Background(), p.sign(t, map[string]any{"email": "ana@example.com", "agenthost_role": "operator"}, nil))
	if err != nil || got != (access.Principal{ID: access.OIDCID(issuer, "ana"), Name: "ana@example.com", Role: access.RoleOperator}) {
		t.Fatalf("Verify = %+v, %v", got, err)
	}
	got, err = v.Verify(context.Background(), p.sign(t, map[string]any{"email": "bo@example.com"}, nil))
	if err != nil || got.Role != access.RoleUser {
		t.Fatalf("no role claim: %+v, %v (want the default role, user)", got, err)
	}
}

// The id is the issuer's and subject's: another subject with the same name claim (the
// name reassigned at the provider) is another identity; the same subject renamed is
// the same one.
func TestOIDCIdentityIsIssuerAndSubjectNotTheName(t *testing.T) {
	p := newIDP(t)
	v := fileVerifier(t, p, oidc.Config{UserClaim: "email"})
	first, err := v.Verify(context.Background(), p.sign(t, map[string]any{"email": "ana@example.com"}, nil))
	if err != nil || !access.IsID(first.ID) {
		t.Fatalf("Verify = %+v, %v", first, err)
	}
	other, err := v.Verify(context.Background(), p.sign(t, map[string]any{"email": "ana@example.com"}, func(c *jwt.Claims) { c.Subject = "someone-else" }))
	if err != nil || other.ID == first.ID || other.Name != first.Name {
		t.Fatalf("another subject named ana: %+v, %v (first %s)", other, err, first.ID)
	}
	renamed, err := v.Verify(context.Background(), p.sign(t, map[string]any{"email": "ana.b@example.com"}, nil))
	if err != nil || renamed.ID != first.ID {
		t.Fatalf("ana renamed: %+v, %v (want id %s)", renamed, err, first.ID)
	}
}

// Every way a token can be wrong is refused.
func TestHostileTokensAreRefused(t *testing.T) {
	p, other := newIDP(t), newIDP(t)
	v := fileVerifier(t, p, oidc.Config{RoleClaim: "role"})
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." +
		base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"`+issuer+`","aud":"`+audience+`","sub":"ana","exp":9999999999}`)) + "."
	cases := map[string]struct {
		tok  string
		want string
	}{
		"wrong audience":  {p.sign(t, nil, func(c *jwt.Claims) { c.Audience = jwt.Audience{"someone-else"} }), "audience"},
		"wrong issuer":    {p.sign(t, nil, func(c *jwt.Claims) { c.Issuer = "https://evil.test" }), "different provider"},
		"expired":         {p.sign(t, nil, func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(time.Now().Add(-time.Hour)) }), "expired"},
		"another key":     {other.sign(t, nil, nil), "signature"},
		"alg none":        {none, "malformed"},
		"unknown role":    {p.sign(t, map[string]any{"role": "root"}, nil), "unknown role"},
		"empty subject":   {p.sign(t, nil, func(c *jwt.Claims) { c.Subject = "" }), "user name is empty"},
		"control subject": {p.sign(t, nil, func(c *jwt.Claims) { c.Subject = "ana\x00" }), "control character"},
		"garbage":         {"a.b.c", "malformed"},
	}
	for name, c := range cases {
		_, err := v.Verify(context.Background(), c.tok)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one mentioning %q", name, err, c.want)
		}
	}
}

// A JWKS URL is fetched when needed (a loopback server here).
func TestKeysFromAJWKSURL(t *testing.T) {
	p := newIDP(t)
	fetched := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetched++
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(p.jwks)
	}))
	defer srv.Close()
	v, err := oidc.New(context.Background(), oidc.Config{Issuer: issuer, Audience: audience, JWKSURL: srv.URL}, "")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if got, err := v.Verify(context.Background(), p.sign(t, nil, nil)); err != nil || got.Name != "ana" {
			t.Fatalf("Verify = %+v, %v", got, err)
		}
	}
	if fetched != 1 {
		t.Fatalf("the key set was fetched %d times, want once (cached)", fetched)
	}
}

func TestConfigErrorsNameTheKey(t *testing.T) {
	for cfg, want := range map[oidc.Config]string{
		{Audience: "a", JWKSFile: "f"}:                                    "issuer:",
		{Issuer: "i", JWKSFile: "f"}:                                      "audience:",
		{Issuer: "i", Audience: "a"}:                                      "jwks_file:",
		{Issuer: "i", Audience: "a", JWKSFile: "f", JWKSURL: "http://x"}:  "jwks_file:",
		{Issuer: "i", Audience: "a", JWKSURL: "file:///etc/passwd"}:       "jwks_url:",
		{Issuer: "i", Audience: "a", JWKSFile: "f", DefaultRole: "owner"}: "default_role:",
	} {
		if err := cfg.Check(); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", cfg, err, want)
		}
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`), 0o600)
	if _, err := oidc.New(context.Background(), oidc.Config{Issuer: "i", Audience: "a", JWKSFile: "bad.json"}, dir); err == nil || !strings.Contains(err.Error(), "not a valid public key") {
		t.Fatalf("a symmetric key in the set: %v", err)
	}
}
