package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/store"
	"github.com/agenthost/agenthost/store/seal"
	"github.com/jackc/pgx/v5"
)

// useKeys applies the stores' one rule for keys and the marker row (seal.Mode).
func (s *Store) useKeys(ctx context.Context, keys *seal.Keys) error {
	var marker []byte
	err := s.db.QueryRow(ctx, `SELECT value FROM kv WHERE plugin = $1 AND key = $2`, seal.MarkerPlugin, seal.MarkerKey).Scan(&marker)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	use, mixed, write, err := seal.Mode(marker, keys, func() (bool, error) {
		var rows int64
		err := s.db.QueryRow(ctx, `SELECT (SELECT COUNT(*) FROM entries) + (SELECT COUNT(*) FROM kv) + (SELECT COUNT(*) FROM memories)`).Scan(&rows)
		return rows == 0, err
	})
	if err != nil {
		return err
	}
	if write != "" {
		if err := s.setMarker(ctx, write); err != nil {
			return err
		}
	}
	s.keys, s.mixed = use, mixed
	if use != nil {
		// A sealed store keeps no vector index (as the SQLite store: seal.go there).
		if _, err := s.db.Exec(ctx, `DELETE FROM memory_index`); err != nil {
			return err
		}
		if _, err := s.db.Exec(ctx, `UPDATE memories SET list = NULL WHERE list IS NOT NULL`); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) setMarker(ctx context.Context, v string) error {
	_, err := s.db.Exec(ctx, `INSERT INTO kv (plugin, key, value) VALUES ($1, $2, $3) ON CONFLICT (plugin, key) DO UPDATE SET value = excluded.value`,
		seal.MarkerPlugin, seal.MarkerKey, []byte(v))
	return err
}

func (s *Store) stale(b []byte) bool {
	id, ok := seal.Sealed(b)
	return !ok || id != s.keys.Current()
}

// Reseal seals every value not sealed with the current key with it, and re-indexes
// memories, as the SQLite store's Reseal does; it may run beside other processes (each
// row is re-sealed in one compare-and-set, reseal.go) and again after a crash.
func (s *Store) Reseal(ctx context.Context) (store.ResealStats, error) {
	st := store.ResealStats{Key: s.keys.Current()}
	if s.keys == nil {
		return st, errors.New("reseal: the store has no keys")
	}
	for _, t := range []struct {
		what string
		n    *int
		t    *resealTable
	}{{"entries", &st.Entries, s.entriesTable()}, {"plugin values", &st.Values, s.kvTable()}, {"memories", &st.Memories, s.memoriesTable()},
		{"attachments", &st.Attachments, s.attachmentsTable()}} {
		n, changed, err := s.resealTable(ctx, t.t)
		*t.n, st.Changed = n, st.Changed+changed
		if err != nil {
			return st, fmt.Errorf("reseal %s: %w", t.what, err)
		}
	}
	if err := s.dropStaleTranscripts(ctx); err != nil {
		return st, fmt.Errorf("reseal the transcript projection: %w", err)
	}
	return st, s.setMarker(ctx, seal.MarkerAll)
}
