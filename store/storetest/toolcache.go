package storetest

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// CacheStore is a store that keeps the tool-result cache.
type CacheStore interface {
	loop.SessionStore
	loop.SessionDeleter
	loop.ResultCache
	DeleteUserResults(ctx context.Context, user string) (int, error)
}

// CacheOpen returns an empty store whose cache holds results of at most maxBytes stored
// bytes and at most maxEntries rows, and a function reading a key's stored value as the
// database holds it (nil when absent).
type CacheOpen func(t *testing.T, maxBytes, maxEntries int) (CacheStore, func(key string) []byte)

// ResultCache runs the tool-result cache's suite; sealed says the store has keys, so
// no stored value may hold its plaintext.
func ResultCache(t *testing.T, open CacheOpen, sealed bool) {
	for _, c := range []struct {
		name string
		fn   func(*testing.T, CacheOpen, bool)
	}{
		{"AResultIsFoundUntilItExpires", cacheExpiry},
		{"ErasingAUserOrASessionErasesItsResults", cacheErase},
		{"ResultsAreBoundedInSizeAndCount", cacheBounds},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open, sealed) })
	}
}

func cached(key, user, session, text string, at time.Time, ttl time.Duration) loop.CachedResult {
	return loop.CachedResult{Key: key, User: user, Session: session, Tool: "lookup", Result: []byte(`{"content":[{"type":"text","text":"` + text + `"}]}`),
		Stored: at, Expires: at.Add(ttl)}
}

func mustPut(t *testing.T, s CacheStore, r loop.CachedResult) {
	t.Helper()
	if err := s.PutResult(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

func found(t *testing.T, s CacheStore, key string, now time.Time) (loop.CachedResult, bool) {
	t.Helper()
	r, ok, err := s.GetResult(context.Background(), key, now)
	if err != nil {
		t.Fatal(err)
	}
	return r, ok
}

func cacheExpiry(t *testing.T, open CacheOpen, sealed bool) {
	s, raw := open(t, 0, 0)
	mustPut(t, s, cached("k1", "ann", "s1", "secret-answer", t0, time.Minute))
	r, ok := found(t, s, "k1", t0.Add(59*time.Second))
	if !ok || !bytes.Contains(r.Result, []byte("secret-answer")) || !r.Stored.Equal(t0) || r.User != "ann" || r.Session != "s1" {
		t.Fatalf("within the TTL: %+v %v", r, ok)
	}
	if _, ok := found(t, s, "k1", t0.Add(time.Minute)); ok {
		t.Fatal("found at its expiry")
	}
	if _, ok := found(t, s, "k2", t0); ok {
		t.Fatal("found a key never stored")
	}
	if got := raw("k1"); sealed == bytes.Contains(got, []byte("secret-answer")) || len(got) == 0 {
		t.Fatalf("stored value (sealed %v): %q", sealed, got)
	}
}

func cacheErase(t *testing.T, open CacheOpen, _ bool) {
	s, _ := open(t, 0, 0)
	ctx := context.Background()
	mustPut(t, s, cached("ann1", "ann", "s1", "a", t0, time.Hour))
	mustPut(t, s, cached("ann2", "ann", "s2", "b", t0, time.Hour))
	mustPut(t, s, cached("bob1", "bob", "s3", "c", t0, time.Hour))
	mustPut(t, s, cached("bob2", "bob", "s4", "d", t0, time.Hour))
	if n, err := s.DeleteUserResults(ctx, "ann"); err != nil || n != 2 {
		t.Fatalf("erase ann: %d %v", n, err)
	}
	if err := s.DeleteSession(ctx, "s4"); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]bool{"ann1": false, "ann2": false, "bob1": true, "bob2": false} {
		if _, ok := found(t, s, key, t0); ok != want {
			t.Fatalf("%s found %v, want %v", key, ok, want)
		}
	}
}

func cacheBounds(t *testing.T, open CacheOpen, _ bool) {
	s, _ := open(t, 400, 3)
	big := cached("big", "ann", "s", string(bytes.Repeat([]byte("x"), 500)), t0, time.Hour)
	mustPut(t, s, big)
	if _, ok := found(t, s, "big", t0); ok {
		t.Fatal("a result over the size bound was stored")
	}
	for i := range 5 {
		mustPut(t, s, cached(fmt.Sprint("k", i), "ann", "s", "v", t0.Add(time.Duration(i)*time.Second), time.Hour))
	}
	for i := range 5 {
		if _, ok := found(t, s, fmt.Sprint("k", i), t0.Add(5*time.Second)); ok != (i >= 2) {
			t.Fatalf("k%d found %v with a bound of 3 entries", i, ok)
		}
	}
}
