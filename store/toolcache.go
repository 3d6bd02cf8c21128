package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/seal"
)

// The tool-result cache (loop.ResultCache, docs/caching.md): one row per cache key,
// its result sealed like every stored value (bound to its key), with the user and the
// session whose run stored it, so that erasing either erases it. Bounded: a result over
// CacheBounds.MaxBytes is not stored, and storing one drops the expired rows and then the
// oldest past CacheBounds.MaxEntries.

// CacheBounds bound a store's tool-result cache.
type CacheBounds struct {
	MaxBytes   int // one result's stored bytes
	MaxEntries int // rows in the cache
}

// DefaultCacheBounds are the bounds of a store that sets none.
var DefaultCacheBounds = CacheBounds{MaxBytes: 256 << 10, MaxEntries: 10000}

// Fits reports whether a result of n stored bytes is within the bounds.
func (b CacheBounds) Fits(n int) bool { return n <= b.MaxBytes }

func (b CacheBounds) orDefault() CacheBounds {
	if b.MaxBytes <= 0 {
		b.MaxBytes = DefaultCacheBounds.MaxBytes
	}
	if b.MaxEntries <= 0 {
		b.MaxEntries = DefaultCacheBounds.MaxEntries
	}
	return b
}

// OrDefault is b with its zero fields set to DefaultCacheBounds'.
func (b CacheBounds) OrDefault() CacheBounds { return b.orDefault() }

var _ loop.ResultCache = (*SQLite)(nil)

// SetCacheBounds sets the bounds of the tool-result cache (zero fields: the defaults).
func (s *SQLite) SetCacheBounds(b CacheBounds) { s.cacheBounds = b.orDefault() }

// GetResult finds a live cached result (loop.ResultCache). A row that does not open
// (sealed with a key since removed) is a miss.
func (s *SQLite) GetResult(ctx context.Context, key string, now time.Time) (loop.CachedResult, bool, error) {
	if err := s.watch.check(); err != nil {
		return loop.CachedResult{}, false, fmt.Errorf("tool cache: %w", err)
	}
	r := loop.CachedResult{Key: key}
	var stored, expires int64
	err := s.queryRow(ctx, `SELECT user_id, session, tool, value, stored, expires FROM tool_cache WHERE key = ? AND expires > ?`, key, now.UnixMilli()).
		Scan(&r.User, &r.Session, &r.Tool, &r.Result, &stored, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("tool cache: %w", err)
	}
	if s.keys != nil {
		if r.Result, err = s.keys.Open(r.Result, seal.CacheAAD(key)); err != nil {
			return r, false, nil
		}
	}
	r.Stored, r.Expires = time.UnixMilli(stored), time.UnixMilli(expires)
	return r, true, nil
}

// PutResult stores a result under its key (loop.ResultCache), within the bounds.
func (s *SQLite) PutResult(ctx context.Context, r loop.CachedResult) error {
	b := s.cacheBounds.orDefault()
	value := s.keys.Seal(r.Result, seal.CacheAAD(r.Key))
	if !b.Fits(len(value)) {
		return nil
	}
	err := s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO tool_cache (key, user_id, session, tool, value, stored, expires) VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (key) DO UPDATE SET user_id = excluded.user_id, session = excluded.session, tool = excluded.tool, value = excluded.value, stored = excluded.stored, expires = excluded.expires`,
			r.Key, r.User, r.Session, r.Tool, value, r.Stored.UnixMilli(), r.Expires.UnixMilli()); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM tool_cache WHERE expires <= ?`, r.Stored.UnixMilli()); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM tool_cache WHERE key IN (SELECT key FROM tool_cache ORDER BY stored, key LIMIT max(0, (SELECT COUNT(*) FROM tool_cache) - ?))`, b.MaxEntries)
		return err
	})
	if err != nil {
		return fmt.Errorf("tool cache: %w", err)
	}
	return nil
}

// DeleteUserResults erases the cached results a user's runs stored.
func (s *SQLite) DeleteUserResults(ctx context.Context, user string) (int, error) {
	var n int64
	err := s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM tool_cache WHERE user_id = ?`, user)
		if err == nil {
			n, err = res.RowsAffected()
		}
		return err
	})
	if err == nil && n > 0 {
		err = s.scrub(ctx) // erase.go: the -wal file still holds the rows' pages
	}
	if err != nil {
		return 0, fmt.Errorf("tool cache: erase %q: %w", user, err)
	}
	return int(n), nil
}

// migrateV14ToolCache adds the tool-result cache (toolcache.go).
func migrateV14ToolCache(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
CREATE TABLE tool_cache (
	key     TEXT    PRIMARY KEY,
	user_id TEXT    NOT NULL,
	session TEXT    NOT NULL,
	tool    TEXT    NOT NULL,
	value   BLOB    NOT NULL,
	stored  INTEGER NOT NULL,
	expires INTEGER NOT NULL
);
CREATE INDEX tool_cache_by_user ON tool_cache (user_id);
CREATE INDEX tool_cache_by_session ON tool_cache (session);
CREATE INDEX tool_cache_by_age ON tool_cache (stored);`)
	return err
}
