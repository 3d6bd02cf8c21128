package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/store/seal"
)

// ErrLocked is opening a store that holds sealed values without keys.
var ErrLocked = seal.ErrLocked

func (s *SQLite) useKeys(ctx context.Context, keys *seal.Keys) error {
	var marker []byte
	err := s.queryRow(ctx, `SELECT value FROM kv WHERE plugin = ? AND key = ?`, seal.MarkerPlugin, seal.MarkerKey).Scan(&marker)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	use, mixed, write, err := seal.Mode(marker, keys, func() (bool, error) {
		var rows int
		err := s.queryRow(ctx, `SELECT (SELECT COUNT(*) FROM entries) + (SELECT COUNT(*) FROM kv) + (SELECT COUNT(*) FROM memories)`).Scan(&rows)
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
	s.keys, s.mixed, s.w.keys = use, mixed, use
	if use != nil {
		return s.dropVectorIndex(ctx)
	}
	return nil
}

// dropVectorIndex deletes the vector index a store built before it had keys: a sealed
// store keeps none (its centroids are averages of plain vectors, and its lists tell which
// memories are alike), and searches it exactly (vectorindex.go).
func (s *SQLite) dropVectorIndex(ctx context.Context) error {
	var any bool
	if err := s.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM memory_index) OR EXISTS (SELECT 1 FROM memories WHERE list IS NOT NULL)`).Scan(&any); err != nil || !any {
		return err
	}
	err := s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM memory_index`); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE memories SET list = NULL WHERE list IS NOT NULL`)
		return err
	})
	if err != nil {
		return err
	}
	return s.scrub(ctx)
}

func (s *SQLite) setMarker(ctx context.Context, v string) error {
	return s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO kv (plugin, key, value) VALUES (?, ?, ?) ON CONFLICT (plugin, key) DO UPDATE SET value = excluded.value`,
			seal.MarkerPlugin, seal.MarkerKey, []byte(v))
		return err
	})
}

// ResealStats is what Reseal did.
type ResealStats struct {
	Key      string `json:"key"` // the key everything is now sealed with
	Entries  int    `json:"entries"`
	Values   int    `json:"values"`
	Memories int    `json:"memories"`
	// Attachments counts the session attachments re-sealed.
	Attachments int `json:"attachments,omitempty"`
	// RunNotes counts the notes of runs re-sealed (a workflow tool step's end).
	RunNotes int `json:"run_notes,omitempty"`
	// Changed counts rows written by another process between Reseal's read and its
	// compare-and-set: skipped then, read again and re-sealed after the pass (if still
	// under an older key).
	Changed int `json:"changed"`
}

// Reseal seals every value not sealed with the current key with it: values written before
// encryption, and those sealed with older keys (rotation). Memories are re-indexed under
// the current key. It may run while the store is in use, by this process or another, and
// be run again after a crash: each row is re-sealed in one compare-and-set (reseal.go), so
// a row written since it was read is never overwritten with what it held before.
func (s *SQLite) Reseal(ctx context.Context) (ResealStats, error) {
	st := ResealStats{Key: s.keys.Current()}
	if s.keys == nil {
		return st, errors.New("reseal: the store has no keys")
	}
	for _, t := range []struct {
		what string
		n    *int
		do   func(context.Context) (int, int, error)
	}{{"entries", &st.Entries, s.resealEntries}, {"plugin values", &st.Values, s.resealKV}, {"memories", &st.Memories, s.resealMemories},
		{"attachments", &st.Attachments, s.resealAttachments}, {"run notes", &st.RunNotes, s.resealRunNotes}} {
		n, changed, err := t.do(ctx)
		*t.n, st.Changed = n, st.Changed+changed
		if err != nil {
			return st, fmt.Errorf("reseal %s: %w", t.what, err)
		}
	}
	// Every value is sealed now: from the next open on, a plain one is a downgrade.
	return st, s.setMarker(ctx, seal.MarkerAll)
}

// stale reports whether a stored value is not sealed with the current key.
func (s *SQLite) stale(b []byte) bool {
	id, ok := seal.Sealed(b)
	return !ok || id != s.keys.Current()
}

// Keys is the ring the store seals with (nil: none); serve reloads it (seal.Keys.Watch).
func (s *SQLite) Keys() *seal.Keys { return s.keys }
