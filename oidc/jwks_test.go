package oidc_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/oidc"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// deadline bounds every wait of these tests: far beyond what any step needs, and far
// below the hour a hung provider takes to answer.
const deadline = 30 * time.Second

// signKid signs a token with key k under key id kid.
func signKid(t *testing.T, k *ecdsa.PrivateKey, kid string) string {
	t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k}, (&jose.SignerOptions{}).WithHeader("kid", kid).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	c := jwt.Claims{Issuer: issuer, Subject: "ana", Audience: jwt.Audience{audience}, Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour))}
	tok, err := jwt.Signed(sig).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func urlVerifier(t *testing.T, url string) *oidc.Verifier {
	t.Helper()
	v, err := oidc.New(context.Background(), oidc.Config{Issuer: issuer, Audience: audience, JWKSURL: url}, "")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func verify(v *oidc.Verifier, tok string) error {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	_, err := v.Verify(ctx, tok)
	return err
}

// hangingIDP answers its first key set request and holds every later one until the
// test ends (its answer comes after the test's own deadline); hung receives once per
// held request.
func hangingIDP(t *testing.T, p *idp) (*httptest.Server, <-chan struct{}) {
	var n atomic.Int32
	release, hung := make(chan struct{}), make(chan struct{}, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			_, _ = w.Write(p.jwks)
			return
		}
		hung <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: the held handlers return
	return srv, hung
}

// A key set fetch that never answers holds no request whose key is already held: while
// a refresh hangs, fifty tokens signed with the held key verify; the token that asked
// for the refresh, and another naming an unknown key, are refused once the short wait
// for keys passes, and the second starts no second fetch.
func TestAHungKeySetFetchBlocksNoRequestTheHeldKeysAnswer(t *testing.T) {
	p, stranger := newIDP(t), newIDP(t)
	srv, hung := hangingIDP(t, p)
	v := urlVerifier(t, srv.URL)
	oidc.SetLimits(v, time.Hour, 50*time.Millisecond, 0, oidc.DefaultMaxJWKS)
	if err := verify(v, p.sign(t, nil, nil)); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() { first <- verify(v, signKid(t, stranger.key, "k2")) }()
	select {
	case <-hung:
	case <-time.After(deadline):
		t.Fatal("the unknown key id started no fetch")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- verify(v, p.sign(t, nil, nil))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a token signed with a held key, while a refresh hangs: %v", err)
		}
	}
	for _, err := range []error{<-first, verify(v, signKid(t, stranger.key, "k3"))} {
		if err == nil || !strings.Contains(err.Error(), "did not answer within 50ms") {
			t.Fatalf("an unknown key while the refresh hangs: %v", err)
		}
	}
	if n, _ := oidc.Fetches(v); n != 2 {
		t.Fatalf("%d fetches, want 2: one in flight at a time", n)
	}
}

// A fetch that does not answer is abandoned at its timeout, with an error saying so; the
// next refresh fetches anew.
func TestAFetchThatDoesNotAnswerEndsAtItsTimeout(t *testing.T) {
	p := newIDP(t)
	srv, _ := hangingIDP(t, p)
	v := urlVerifier(t, srv.URL)
	if err := verify(v, p.sign(t, nil, nil)); err != nil { // the first request is answered
		t.Fatal(err)
	}
	oidc.SetLimits(v, 100*time.Millisecond, deadline, 0, oidc.DefaultMaxJWKS)
	for range 2 {
		err := verify(v, signKid(t, p.key, "k9"))
		if err == nil || !strings.Contains(err.Error(), "the key set URL did not answer within 100ms") {
			t.Fatalf("a hung fetch: %v", err)
		}
	}
	if n, _ := oidc.Fetches(v); n != 3 {
		t.Fatalf("%d fetches, want 3", n)
	}
}

// A key set body larger than the limit is read up to the limit and one byte, then
// refused: the provider's writes fail long before the 256 MiB it tries to send.
func TestAHugeKeySetIsReadNoFurtherThanTheLimit(t *testing.T) {
	const huge = 256 << 20
	type result struct {
		written int
		err     error
	}
	done := make(chan result, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		chunk := []byte(`{"keys":[` + strings.Repeat(" ", 64<<10-9))
		var res result
		for res.written < huge && res.err == nil {
			var n int
			n, res.err = w.Write(chunk)
			res.written += n
			chunk = []byte(strings.Repeat(" ", 64<<10))
		}
		done <- res
	}))
	defer srv.Close()
	p := newIDP(t)
	v := urlVerifier(t, srv.URL)
	err := verify(v, p.sign(t, nil, nil))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("the key set is larger than %d bytes", oidc.DefaultMaxJWKS)) {
		t.Fatalf("a huge key set: %v", err)
	}
	if _, read := oidc.Fetches(v); read != oidc.DefaultMaxJWKS+1 {
		t.Fatalf("read %d bytes of the body, want the limit and one (%d)", read, oidc.DefaultMaxJWKS+1)
	}
	select {
	case res := <-done:
		if res.err == nil || res.written >= huge {
			t.Fatalf("the provider wrote %d bytes (%v): the body was read to its end", res.written, res.err)
		}
	case <-time.After(deadline):
		t.Fatal("the provider is still writing: the connection was not closed at the limit")
	}
}

// A hundred tokens naming key ids the set does not hold fetch it once: the refresh is
// single-flight and rate-limited; the held key still verifies, without a fetch.
func TestUnknownKeyIDsFetchTheKeySetOncePerInterval(t *testing.T) {
	p, stranger := newIDP(t), newIDP(t)
	var fetched atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetched.Add(1)
		_, _ = w.Write(p.jwks)
	}))
	defer srv.Close()
	v := urlVerifier(t, srv.URL)
	var wg sync.WaitGroup
	var refused atomic.Int32
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := verify(v, signKid(t, stranger.key, fmt.Sprint("kid-", i))); err != nil && strings.Contains(err.Error(), fmt.Sprintf(`no key "kid-%d"`, i)) {
				refused.Add(1)
			}
		}()
	}
	wg.Wait()
	if err := verify(v, p.sign(t, nil, nil)); err != nil {
		t.Fatal(err)
	}
	if n, r := fetched.Load(), refused.Load(); n != 1 || r != 100 {
		t.Fatalf("100 unknown key ids: %d fetches (want 1), %d refused naming their key (want 100)", n, r)
	}
}

// Nothing the provider answers reaches the error a client sees (the server puts it in
// the 401): not an error body, not a reason phrase, not a body that is not a key set; and
// a redirect is not followed.
func TestTheProvidersAnswerNeverReachesTheError(t *testing.T) {
	const secret = "SECRET-IDP-INTERNALS"
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	handlers := map[string]struct {
		h    http.HandlerFunc
		want string
	}{
		"error body": {func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, secret+" stack trace", http.StatusInternalServerError)
		}, "answered HTTP 500"},
		"not a key set": {func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, `{"keys": "`+secret+`"}`)
		}, "not a JSON Web Key Set"},
		"no usable key": {func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, `{"keys": [{"kty": "oct", "kid": "`+secret+`", "k": "c2VjcmV0"}]}`)
		}, "holds no usable public key"},
		"redirect": {func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/"+secret, http.StatusFound)
		}, "answered HTTP 302"},
	}
	p := newIDP(t)
	for name, c := range handlers {
		srv := httptest.NewServer(c.h)
		err := verify(urlVerifier(t, srv.URL), p.sign(t, nil, nil))
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), srv.URL) {
			t.Errorf("%s: %v, want %q and no word of the answer or the URL", name, err, c.want)
		}
	}
	if elsewhere.Load() != 0 {
		t.Fatal("the redirect was followed")
	}
	// A status line's reason phrase is the provider's too.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = bufio.NewReader(c).ReadString('\n')
		fmt.Fprint(c, "HTTP/1.1 503 "+secret+"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	}()
	err = verify(urlVerifier(t, "http://"+ln.Addr().String()), p.sign(t, nil, nil))
	if err == nil || !strings.Contains(err.Error(), "answered HTTP 503") || strings.Contains(err.Error(), secret) {
		t.Fatalf("a reason phrase: %v", err)
	}
}

// A token forged under a key id the set holds is refused without a fetch: only a key id
// not held refreshes the set.
func TestAForgedSignatureWithAHeldKeyIDFetchesNothing(t *testing.T) {
	p, forger := newIDP(t), newIDP(t)
	var fetched atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetched.Add(1)
		_, _ = w.Write(p.jwks)
	}))
	defer srv.Close()
	v := urlVerifier(t, srv.URL)
	oidc.SetLimits(v, time.Second, time.Second, 0, oidc.DefaultMaxJWKS) // every refresh allowed
	if err := verify(v, p.sign(t, nil, nil)); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if err := verify(v, signKid(t, forger.key, "k1")); err == nil || !strings.Contains(err.Error(), "signature does not verify") {
			t.Fatalf("a forged signature under the held key id: %v", err)
		}
	}
	if n := fetched.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1", n)
	}
}

// Keys held longer than their age limit are refreshed in the background: the request
// that notices is answered with the held key, and once the new set arrives a key the
// provider withdrew no longer verifies, while its new key does.
func TestOldKeysAreRefreshedInTheBackgroundAndAWithdrawnKeyStopsVerifying(t *testing.T) {
	p, next := newIDP(t), newIDP(t)
	nextSet, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &next.key.PublicKey, KeyID: "k2", Algorithm: "ES256", Use: "sig"}}})
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1) == 1 {
			_, _ = w.Write(p.jwks)
			return
		}
		_, _ = w.Write(nextSet)
	}))
	defer srv.Close()
	v := urlVerifier(t, srv.URL)
	oidc.SetLimits(v, deadline, deadline, 0, oidc.DefaultMaxJWKS)
	if err := verify(v, p.sign(t, nil, nil)); err != nil {
		t.Fatal(err)
	}
	oidc.SetMaxKeyAge(v, time.Nanosecond)
	if err := verify(v, p.sign(t, nil, nil)); err != nil {
		t.Fatalf("the held key, old: %v", err)
	}
	stop := time.Now().Add(deadline)
	for verify(v, p.sign(t, nil, nil)) == nil {
		if time.Now().After(stop) {
			t.Fatal("the withdrawn key still verifies")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := verify(v, signKid(t, next.key, "k2")); err != nil {
		t.Fatalf("the new key: %v", err)
	}
}
