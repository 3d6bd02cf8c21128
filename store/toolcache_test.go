package store_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/store"
	"github.com/agenthost/agenthost/store/seal"
	"github.com/agenthost/agenthost/store/storetest"
)

func cacheOpener(keys *seal.Keys) storetest.CacheOpen {
	return func(t *testing.T, maxBytes, maxEntries int) (storetest.CacheStore, func(string) []byte) {
		s := openSealed(t, filepath.Join(t.TempDir(), "c.db"), keys)
		s.SetCacheBounds(store.CacheBounds{MaxBytes: maxBytes, MaxEntries: maxEntries})
		return s, func(key string) []byte {
			db, err := sql.Open("sqlite", "file:"+s.Path())
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var v []byte
			_ = db.QueryRowContext(context.Background(), `SELECT value FROM tool_cache WHERE key = ?`, key).Scan(&v)
			return v
		}
	}
}

func TestToolCache_SQLite(t *testing.T) {
	storetest.ResultCache(t, cacheOpener(nil), false)
}

func TestToolCache_SealedSQLite(t *testing.T) {
	storetest.ResultCache(t, cacheOpener(newRing(t, newKey(t))), true)
}
