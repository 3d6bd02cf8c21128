package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store"
	"github.com/agenthost/agenthost/store/seal"
)

// The tool-result cache as the SQLite store keeps it (store/toolcache.go), in the
// database every node shares: a result one node stored answers another node's call.

var _ loop.ResultCache = (*Store)(nil)

// SetCacheBounds sets the bounds of the tool-result cache (zero fields: the defaults).
func (s *Store) SetCacheBounds(b store.CacheBounds) { s.cacheBounds = b.OrDefault() }

// GetResult finds a live cached result (loop.ResultCache). A row that does not open
// (sealed with a key since removed) is a miss.
func (s *Store) GetResult(ctx context.Context, key string, now time.Time) (loop.CachedResult, bool, error) {
	r := loop.CachedResult{Key: key}
	var stored, expires int64
	err := s.db.QueryRow(ctx, `SELECT user_id, session, tool, value, stored, expires FROM tool_cache WHERE key = $1 AND expires > $2`, key, now.UnixMilli()).
		Scan(&r.User, &r.Session, &r.Tool, &r.Result, &stored, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
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
func (s *Store) PutResult(ctx context.Context, r loop.CachedResult) error {
	b := s.cacheBounds.OrDefault()
	value := s.keys.Seal(r.Result, seal.CacheAAD(r.Key))
	if !b.Fits(len(value)) {
		return nil
	}
	err := s.db.BeginFunc(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO tool_cache (key, user_id, session, tool, value, stored, expires) VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (key) DO UPDATE SET user_id = excluded.user_id, session = excluded.session, tool = excluded.tool, value = excluded.value, stored = excluded.stored, expires = excluded.expires`,
			r.Key, r.User, r.Session, r.Tool, value, r.Stored.UnixMilli(), r.Expires.UnixMilli()); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM tool_cache WHERE expires <= $1`, r.Stored.UnixMilli()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM tool_cache WHERE key IN (SELECT key FROM tool_cache ORDER BY stored, key LIMIT GREATEST(0, (SELECT COUNT(*) FROM tool_cache) - $1))`, b.MaxEntries)
		return err
	})
	if err != nil {
		return fmt.Errorf("tool cache: %w", err)
	}
	return nil
}

// DeleteUserResults erases the cached results a user's runs stored.
func (s *Store) DeleteUserResults(ctx context.Context, user string) (int, error) {
	tag, err := s.db.Exec(ctx, `DELETE FROM tool_cache WHERE user_id = $1`, user)
	if err != nil {
		return 0, fmt.Errorf("tool cache: erase %q: %w", user, err)
	}
	return int(tag.RowsAffected()), nil
}
