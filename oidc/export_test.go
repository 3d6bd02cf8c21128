package oidc

import "time"

// SetLimits shortens a JWKS URL Verifier's limits for a test: the fetch timeout, the
// wait for a refresh in flight, the least time between fetches and the body limit.
func SetLimits(v *Verifier, fetch, wait, minRefresh time.Duration, maxBody int64) {
	r := v.keys.(*remoteKeys)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lim = limits{maxBody: maxBody, fetch: fetch, wait: wait, minRefresh: minRefresh, maxAge: maxKeyAge}
}

// SetMaxKeyAge sets how long fetched keys are trusted before a background refresh.
func SetMaxKeyAge(v *Verifier, d time.Duration) {
	r := v.keys.(*remoteKeys)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lim.maxAge = d
}

// Fetches reports how many fetches a JWKS URL Verifier started and how many bytes of
// the body the last one read.
func Fetches(v *Verifier) (count int, lastRead int64) {
	r := v.keys.(*remoteKeys)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count, r.read
}

// DefaultMaxJWKS is the body limit of a key set.
const DefaultMaxJWKS = maxJWKS
