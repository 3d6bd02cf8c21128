package oidc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// The limits of a JWKS URL (SECURITY.md, "OIDC"): a key set is a few KiB, an answer takes
// well under a second, and keys rotate rarely.
const (
	// maxJWKS bounds a key set, from a file or a URL: the body is read no further.
	maxJWKS = 1 << 20
	// fetchTimeout bounds one fetch, from the connection to the body's last byte.
	fetchTimeout = 10 * time.Second
	// waitForKeys is how long a request waits for a refresh in flight before it is
	// refused; the fetch goes on, bounded by fetchTimeout, and requests whose key is
	// held are answered meanwhile.
	waitForKeys = 3 * time.Second
	// minRefresh is the least time between two fetches: a token naming a key not held
	// fetches the set at most once per minRefresh, however many such tokens come.
	minRefresh = 30 * time.Second
	// maxKeyAge is how long a fetched set is trusted before a request refreshes it in
	// the background (so a key the provider withdrew stops verifying).
	maxKeyAge = time.Hour
)

// algs are the signing algorithms accepted (asymmetric only).
var algs = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.ES256, jose.ES384, jose.ES512, jose.PS256, jose.EdDSA}

// remoteKeys is the key set of a JWKS URL (a gooidc.KeySet). It replaces go-oidc's
// RemoteKeySet, which waits on a fetch without a timeout, fetches for every unknown key
// id, reads the body without a limit and quotes it in its errors.
//
// It holds the keys last fetched. A token whose key is held is verified with it, whatever
// a fetch is doing. A token naming a key not held starts a fetch (one at a time, at most
// one per minRefresh) and waits for it at most waitForKeys. The fetch is the only code
// that reads the provider's answers, and its errors name the failure in words of ours:
// nothing the provider sends reaches an error, so none reaches a client's 401.
type remoteKeys struct {
	url    string
	life   context.Context // bounds fetches for the Verifier's life
	client *http.Client
	lim    limits

	mu       sync.Mutex
	keys     []jose.JSONWebKey
	fetched  time.Time     // when the keys were fetched (zero: never)
	started  time.Time     // when the last fetch started
	inflight chan struct{} // closed when the fetch in flight ends; nil when none
	lastErr  error         // why the last fetch failed, nil if it succeeded
	read     int64         // bytes of the provider's body the last fetch read
	count    int           // fetches started
}

// limits are the constants above; tests shorten them.
type limits struct {
	maxBody                         int64
	fetch, wait, minRefresh, maxAge time.Duration
}

var defaultLimits = limits{maxBody: maxJWKS, fetch: fetchTimeout, wait: waitForKeys, minRefresh: minRefresh, maxAge: maxKeyAge}

func newRemoteKeys(ctx context.Context, url string) *remoteKeys {
	return &remoteKeys{url: url, life: ctx, lim: defaultLimits, client: &http.Client{
		// Only the configured URL is fetched: a redirect is an error, not a second fetch.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// VerifySignature checks jwt's signature with the held keys, fetching the set when the
// token names a key not held (gooidc.KeySet).
func (r *remoteKeys) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	jws, err := jose.ParseSigned(jwt, algs)
	if err != nil {
		return nil, fmt.Errorf("malformed jwt: %w", err)
	}
	kid := ""
	if len(jws.Signatures) > 0 {
		kid = jws.Signatures[0].Header.KeyID
	}
	keys, stale := r.held()
	if payload, found, err := verifyWith(jws, kid, keys); found {
		if stale {
			r.refresh() // in the background: these keys answer meanwhile
		}
		return payload, err
	}
	done, err := r.refresh()
	if err != nil {
		return nil, fmt.Errorf("no key %q in the identity provider's key set (%w)", kid, err)
	}
	wait := time.NewTimer(r.lim.wait)
	defer wait.Stop()
	select {
	case <-done:
	case <-wait.C:
		return nil, fmt.Errorf("no key %q in the identity provider's key set, and it did not answer within %s", kid, r.lim.wait)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r.mu.Lock()
	keys, ferr := r.keys, r.lastErr
	r.mu.Unlock()
	if payload, found, err := verifyWith(jws, kid, keys); found {
		return payload, err
	}
	if ferr != nil {
		return nil, fmt.Errorf("no key %q in the identity provider's key set (fetching it: %w)", kid, ferr)
	}
	return nil, fmt.Errorf("no key %q in the identity provider's key set", kid)
}

// verifyWith verifies jws with the keys named kid (all keys when the token names none);
// found is false when no such key is held.
func verifyWith(jws *jose.JSONWebSignature, kid string, keys []jose.JSONWebKey) (payload []byte, found bool, err error) {
	for _, k := range keys {
		if kid != "" && k.KeyID != kid {
			continue
		}
		found = true
		if payload, err := jws.Verify(&k); err == nil {
			return payload, true, nil
		}
	}
	if found {
		return nil, true, errors.New("the token's signature does not verify with the identity provider's key")
	}
	return nil, false, nil
}

// held returns the keys held, and whether they are older than maxAge.
func (r *remoteKeys) held() ([]jose.JSONWebKey, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.keys, !r.fetched.IsZero() && time.Since(r.fetched) > r.lim.maxAge
}

// refresh starts a fetch unless one is in flight or the last started within minRefresh
// (an error then), and returns a channel closed when the fetch in flight ends.
func (r *remoteKeys) refresh() (<-chan struct{}, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inflight != nil {
		return r.inflight, nil
	}
	if !r.started.IsZero() && time.Since(r.started) < r.lim.minRefresh {
		if r.lastErr != nil {
			return nil, fmt.Errorf("fetching it: %w; the next fetch is due within %s", r.lastErr, r.lim.minRefresh)
		}
		return nil, fmt.Errorf("the key set was fetched less than %s ago", r.lim.minRefresh)
	}
	r.started, r.inflight = time.Now(), make(chan struct{})
	r.count++
	go r.fetch(r.inflight)
	return r.inflight, nil
}

// fetch fetches the key set once and keeps it if it is usable; the held keys stay
// otherwise.
func (r *remoteKeys) fetch(done chan struct{}) {
	keys, n, err := r.get()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.read, r.lastErr = n, err
	if err == nil {
		r.keys, r.fetched = keys, time.Now()
	}
	r.inflight = nil
	close(done)
}

// get fetches and parses the key set; n is how many bytes of the body it read. Its
// errors say what failed in our words and never quote the answer (nor the URL: the
// error reaches the client).
func (r *remoteKeys) get() (keys []jose.JSONWebKey, n int64, err error) {
	ctx, cancel := context.WithTimeout(r.life, r.lim.fetch)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return nil, 0, errors.New("the key set URL is not a valid request")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, 0, fmt.Errorf("the key set URL did not answer within %s", r.lim.fetch)
		}
		return nil, 0, errors.New("the key set URL could not be reached")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("the key set URL answered HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, r.lim.maxBody+1))
	n = int64(len(body))
	switch {
	case n > r.lim.maxBody:
		return nil, n, fmt.Errorf("the key set is larger than %d bytes", r.lim.maxBody)
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, n, fmt.Errorf("the key set did not arrive within %s", r.lim.fetch)
	case err != nil:
		return nil, n, errors.New("the key set's answer broke off")
	}
	keys, err = parseKeys(body)
	return keys, n, err
}

// parseKeys reads a JWK Set, skipping keys it cannot use (unsupported types, private or
// symmetric keys), as a provider's set may hold some; a set with no usable key is an error.
func parseKeys(body []byte) ([]jose.JSONWebKey, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, errors.New("the key set is not a JSON Web Key Set")
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var k jose.JSONWebKey
		if json.Unmarshal(raw, &k) != nil || !k.Valid() || !k.IsPublic() {
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("the key set holds no usable public key")
	}
	return keys, nil
}
