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
	err := s.pool.QueryRow(ctx, `SELECT value FROM kv WHERE plugin = $1 AND key = $2`, seal.MarkerPlugin, seal.MarkerKey).Scan(&marker)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return unavailable(err)
	}
	use, mixed, write, err := seal.Mode(marker, keys, func() (bool, error) {
		var rows int64
		err := s.pool.QueryRow(ctx, `SELECT (SELECT COUNT(*) FROM entries) + (SELECT COUNT(*) FROM kv) + (SELECT COUNT(*) FROM memories)`).Scan(&rows)
		return rows == 0, unavailable(err)
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

func (s *Store) setMarker(ctx context.Context, v string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO kv (plugin, key, value) VALUES ($1, $2, $3) ON CONFLICT (plugin, key) DO UPDATE SET value = excluded.value`,
		seal.MarkerPlugin, seal.MarkerKey, []byte(v))
	return unavailable(err)
}

func (s *Store) stale(b []byte) bool {
	id, ok := seal.Sealed(b)
	return !ok || id != s.keys.Current()
}

// resealBatch bounds one transaction of Reseal.
const resealBatch = 256

// Reseal seals every value not sealed with the current key with it, and re-indexes
// memories, as the SQLite store's Reseal does; it may run beside other processes (each
// row is re-read under its session's lock) and again after a crash.
func (s *Store) Reseal(ctx context.Context) (store.ResealStats, error) {
	st := store.ResealStats{Key: s.keys.Current()}
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
	return st, s.setMarker(ctx, seal.MarkerAll)
}

func (s *Store) resealEntries(ctx context.Context) (int, error) {
	n, afterS, afterQ := 0, "", int64(0)
	for {
		type row struct {
			session string
			seq     int64
			body    []byte
		}
		rows, err := s.pool.Query(ctx, `SELECT session, seq, body FROM entries WHERE (session, seq) > ($1, $2) ORDER BY session, seq LIMIT $3`, afterS, afterQ, resealBatch)
		if err != nil {
			return n, unavailable(err)
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
		afterS, afterQ = batch[len(batch)-1].session, batch[len(batch)-1].seq
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			for _, r := range batch {
				if !s.stale(r.body) {
					continue
				}
				plain, err := s.keys.Open(r.body, seal.EntryAAD(r.session, r.seq))
				if err != nil {
					return fmt.Errorf("session %q entry %d: %w", r.session, r.seq, err)
				}
				if _, err := tx.Exec(ctx, `UPDATE entries SET body = $1 WHERE session = $2 AND seq = $3`,
					s.keys.Seal(plain, seal.EntryAAD(r.session, r.seq)), r.session, r.seq); err != nil {
					return err
				}
				n++
			}
			return nil
		})
		if err != nil {
			return n, unavailable(err)
		}
	}
}

func (s *Store) resealKV(ctx context.Context) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT plugin, key, value FROM kv WHERE NOT (plugin = $1 AND key = $2) FOR UPDATE`, seal.MarkerPlugin, seal.MarkerKey)
		if err != nil {
			return err
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
				return err
			}
			if s.stale(r.value) {
				todo = append(todo, r)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, r := range todo {
			plain, err := s.keys.Open(r.value, seal.KVAAD(r.plugin, r.key))
			if err != nil {
				return fmt.Errorf("%s/%s: %w", r.plugin, r.key, err)
			}
			if _, err := tx.Exec(ctx, `UPDATE kv SET value = $1 WHERE plugin = $2 AND key = $3`, s.keys.Seal(plain, seal.KVAAD(r.plugin, r.key)), r.plugin, r.key); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, unavailable(err)
}

func (s *Store) resealMemories(ctx context.Context) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id, text, metadata, vector FROM memories FOR UPDATE`)
		if err != nil {
			return err
		}
		type row struct {
			id, text     string
			meta, vector []byte
		}
		var todo []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.id, &r.text, &r.meta, &r.vector); err != nil {
				rows.Close()
				return err
			}
			if s.stale([]byte(r.text)) || s.stale(r.meta) || (r.vector != nil && s.stale(r.vector)) {
				todo = append(todo, r)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, r := range todo {
			t, err1 := s.keys.Open([]byte(r.text), seal.MemoryAAD(r.id, "text"))
			m, err2 := s.keys.Open(r.meta, seal.MemoryAAD(r.id, "metadata"))
			var vec []byte
			var err3 error
			if r.vector != nil {
				vec, err3 = s.keys.Open(r.vector, seal.MemoryAAD(r.id, "vector"))
				vec = s.keys.Seal(vec, seal.MemoryAAD(r.id, "vector"))
			}
			if err := errors.Join(err1, err2, err3); err != nil {
				return fmt.Errorf("memory %s: %w", r.id, err)
			}
			text, terms, meta := s.sealMemory(r.id, string(t), m)
			if _, err := tx.Exec(ctx, `UPDATE memories SET text = $1, terms = $2, metadata = $3, vector = $4 WHERE id = $5`, text, terms, meta, vec, r.id); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, unavailable(err)
}
