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
	s.keys, s.mixed = use, mixed
	return nil
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
}

// resealBatch bounds one transaction of Reseal, so the writer is not held for long.
const resealBatch = 256

// Reseal seals every value not sealed with the current key with it: values written before
// encryption, and those sealed with older keys (rotation). Memories are re-indexed under
// the current key. It may run while the store is in use and be run again after a crash:
// each batch is a transaction and only rows not yet under the current key are touched.
func (s *SQLite) Reseal(ctx context.Context) (ResealStats, error) {
	st := ResealStats{Key: s.keys.Current()}
	if s.keys == nil {
		return st, errors.New("reseal: the store has no keys")
	}
	var err error
	if st.Entries, err = s.resealEntries(ctx); err != nil {
		return st, fmt.Errorf("reseal entries: %w", err)
	}
	if st.Values, err = s.resealKV(ctx); err != nil {
		return st, fmt.Errorf("reseal plugin values: %w", err)
	}
	if st.Memories, err = s.resealMemories(ctx); err != nil {
		return st, fmt.Errorf("reseal memories: %w", err)
	}
	// Every value is sealed now: from the next open on, a plain one is a downgrade.
	return st, s.setMarker(ctx, seal.MarkerAll)
}

// stale reports whether a stored value is not sealed with the current key.
func (s *SQLite) stale(b []byte) bool {
	id, ok := seal.Sealed(b)
	return !ok || id != s.keys.Current()
}

func (s *SQLite) resealEntries(ctx context.Context) (int, error) {
	type row struct {
		session string
		seq     int64
		body    []byte
	}
	n := 0
	after := row{}
	for {
		rows, err := s.query(ctx, `SELECT session, seq, body FROM entries WHERE (session, seq) > (?, ?) ORDER BY session, seq LIMIT ?`, after.session, after.seq, resealBatch)
		if err != nil {
			return n, err
		}
		var batch []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.session, &r.seq, &r.body); err != nil {
				rows.Close()
				return n, err
			}
			batch = append(batch, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(batch) == 0 {
			return n, err
		}
		after = batch[len(batch)-1]
		var todo []row
		for _, r := range batch {
			if !s.stale(r.body) {
				continue
			}
			plain, err := s.keys.Open(r.body, seal.EntryAAD(r.session, r.seq))
			if err != nil {
				return n, fmt.Errorf("session %q entry %d: %w", r.session, r.seq, err)
			}
			todo = append(todo, row{r.session, r.seq, s.keys.Seal(plain, seal.EntryAAD(r.session, r.seq))})
		}
		if len(todo) == 0 {
			continue
		}
		err = s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
			for _, r := range todo {
				if _, err := tx.ExecContext(ctx, `UPDATE entries SET body = ? WHERE session = ? AND seq = ?`, r.body, r.session, r.seq); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return n, err
		}
		n += len(todo)
	}
}

func (s *SQLite) resealKV(ctx context.Context) (int, error) {
	rows, err := s.query(ctx, `SELECT plugin, key, value FROM kv WHERE NOT (plugin = ? AND key = ?)`, seal.MarkerPlugin, seal.MarkerKey)
	if err != nil {
		return 0, err
	}
	type row struct {
		plugin, key string
		value       []byte
	}
	var todo []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.plugin, &r.key, &r.value); err != nil {
			rows.Close()
			return 0, err
		}
		if s.stale(r.value) {
			plain, err := s.keys.Open(r.value, seal.KVAAD(r.plugin, r.key))
			if err != nil {
				rows.Close()
				return 0, fmt.Errorf("%s/%s: %w", r.plugin, r.key, err)
			}
			todo = append(todo, row{r.plugin, r.key, s.keys.Seal(plain, seal.KVAAD(r.plugin, r.key))})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for i := 0; i < len(todo); i += resealBatch {
		chunk := todo[i:min(i+resealBatch, len(todo))]
		err := s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
			for _, r := range chunk {
				if _, err := tx.ExecContext(ctx, `UPDATE kv SET value = ? WHERE plugin = ? AND key = ?`, r.value, r.plugin, r.key); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return i, err
		}
	}
	return len(todo), nil
}
