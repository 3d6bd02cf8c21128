package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// With [auth.oidc] jwks_url, an identity provider that fails answers its error body to
// agenthost only: the client's 401 says the key set URL answered HTTP 500, and holds no
// word of the body nor the provider's URL; a second token in the refresh interval does
// not ask the provider again.
func TestE2E_TheIdentityProvidersErrorBodyIsNotEchoedInThe401(t *testing.T) {
	const secret = "SECRET-IDP-STACK-TRACE"
	var asked atomic.Int32
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		asked.Add(1)
		http.Error(w, secret+" at db.internal:5432", http.StatusInternalServerError)
	}))
	defer idp.Close()
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "hello"}]}`})
	appendManifest(t, e.manifest, "\n[auth.oidc]\nissuer = \"https://idp.test\"\naudience = \"agenthost\"\njwks_url = \""+idp.URL+"/jwks\"\n")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	s := e.serve(t)
	for _, sub := range []string{"ana", "bo"} {
		tok, err := jwt.Signed(sig).Claims(jwt.Claims{Issuer: "https://idp.test", Subject: sub, Audience: jwt.Audience{"agenthost"},
			Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour))}).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		code, body := call(t, s, tok, "GET", "/v1/sessions", "")
		if code != 401 || !strings.Contains(body, "invalid bearer token") || strings.Contains(body, secret) || strings.Contains(body, idp.URL) {
			t.Fatalf("%s: %d %s", sub, code, body)
		}
		if sub == "ana" && !strings.Contains(body, "answered HTTP 500") {
			t.Fatalf("the first 401 does not say why: %s", body)
		}
	}
	if n := asked.Load(); n != 1 {
		t.Fatalf("the provider was asked %d times, want once", n)
	}
}
