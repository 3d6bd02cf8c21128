package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"

	"github.com/agenthost/agenthost/store"
	"github.com/agenthost/agenthost/store/pgtest"
	"github.com/agenthost/agenthost/store/seal"
	"github.com/agenthost/agenthost/store/storetest"
)

func cacheOpener(srv *pgtest.Server, keys *seal.Keys) storetest.CacheOpen {
	return func(t *testing.T, maxBytes, maxEntries int) (storetest.CacheStore, func(string) []byte) {
		s := openKeyed(t, srv.NewDatabase(t), keys)
		s.SetCacheBounds(store.CacheBounds{MaxBytes: maxBytes, MaxEntries: maxEntries})
		return s, func(key string) []byte {
			var v []byte
			_ = s.db.pool.QueryRow(context.Background(), `SELECT value FROM tool_cache WHERE key = $1`, key).Scan(&v)
			return v
		}
	}
}

func TestToolCache_Postgres(t *testing.T) {
	srv := pgtest.Start(t)
	storetest.ResultCache(t, cacheOpener(srv, nil), false)
	k, _ := seal.NewKey()
	t.Run("sealed", func(t *testing.T) { storetest.ResultCache(t, cacheOpener(srv, ring(t, k)), true) })
}

// A result one node stored answers another node's lookup: both open the same database.
func TestToolCache_SharedAcrossNodes(t *testing.T) {
	url := pgtest.Start(t).NewDatabase(t)
	a, b := open(t, url), open(t, url)
	r := loopCached("k", "ann", "s1")
	if err := a.PutResult(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	got, ok, err := b.GetResult(context.Background(), "k", r.Stored)
	if err != nil || !ok || string(got.Result) != string(r.Result) {
		t.Fatalf("node b: %+v %v %v", got, ok, err)
	}
}

func loopCached(key, user, session string) loop.CachedResult {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return loop.CachedResult{Key: key, User: user, Session: session, Tool: "lookup", Result: []byte(`{"content":[]}`), Stored: at, Expires: at.Add(time.Hour)}
}
