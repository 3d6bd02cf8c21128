package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/store/seal"
	"github.com/jackc/pgx/v5"
)

// Reseal runs while other processes write, as the SQLite store's does: the same pass
// (seal.Pass) re-seals each row by a compare-and-set (one UPDATE ... WHERE ... IS NOT
// DISTINCT FROM) and reads again the rows that changed meanwhile. No row is locked while
// it works on it, so serving is not held up. What is PostgreSQL's here is resealTable's
// statements.

type resealTable struct {
	name   string
	start  []any  // the key before every row
	page   string // rows after a key ($1.. the key, then the limit), in key order
	one    string // the row of one key
	update string // SET set... WHERE key... AND old... (NULL equal to NULL)
	scan   func(pgx.Rows) (seal.Row, error)
	reseal func(*seal.Row) (stale bool, err error) // fills Set
}

func (s *Store) entriesTable() *resealTable {
	return &resealTable{name: "entries", start: []any{"", int64(0)},
		page:   `SELECT session, seq, body FROM entries WHERE (session, seq) > ($1, $2) ORDER BY session, seq LIMIT $3`,
		one:    `SELECT session, seq, body FROM entries WHERE session = $1 AND seq = $2`,
		update: `UPDATE entries SET body = $1 WHERE session = $2 AND seq = $3 AND body = $4`,
		scan: func(rows pgx.Rows) (seal.Row, error) {
			var session string
			var seq int64
			var body []byte
			err := rows.Scan(&session, &seq, &body)
			return seal.Row{Key: []any{session, seq}, Old: []any{body}}, err
		},
		reseal: func(r *seal.Row) (bool, error) {
			return s.resealValue(r, r.Old[0].([]byte), seal.EntryAAD(r.Key[0].(string), r.Key[1].(int64)), "session %q entry %d", r.Key...)
		}}
}

func (s *Store) kvTable() *resealTable {
	return &resealTable{name: "kv", start: []any{"", ""},
		page: `SELECT plugin, key, value FROM kv WHERE (plugin, key) > ($1, $2) AND NOT (plugin = '` + seal.MarkerPlugin + `' AND key = '` + seal.MarkerKey + `')
			ORDER BY plugin, key LIMIT $3`,
		one:    `SELECT plugin, key, value FROM kv WHERE plugin = $1 AND key = $2`,
		update: `UPDATE kv SET value = $1 WHERE plugin = $2 AND key = $3 AND value = $4`,
		scan: func(rows pgx.Rows) (seal.Row, error) {
			var plugin, key string
			var value []byte
			err := rows.Scan(&plugin, &key, &value)
			return seal.Row{Key: []any{plugin, key}, Old: []any{value}}, err
		},
		reseal: func(r *seal.Row) (bool, error) {
			return s.resealValue(r, r.Old[0].([]byte), seal.KVAAD(r.Key[0].(string), r.Key[1].(string)), "%s/%s", r.Key...)
		}}
}

func (s *Store) memoriesTable() *resealTable {
	return &resealTable{name: "memories", start: []any{""},
		page: `SELECT id, text, metadata, vector FROM memories WHERE id > $1 ORDER BY id LIMIT $2`,
		one:  `SELECT id, text, metadata, vector FROM memories WHERE id = $1`,
		update: `UPDATE memories SET text = $1, terms = $2, metadata = $3, vector = $4 WHERE id = $5
			AND text = $6 AND metadata = $7 AND vector IS NOT DISTINCT FROM $8`,
		scan: func(rows pgx.Rows) (seal.Row, error) {
			var id, text string
			var meta, vector []byte
			err := rows.Scan(&id, &text, &meta, &vector)
			return seal.Row{Key: []any{id}, Old: []any{text, meta, vector}}, err
		},
		reseal: func(r *seal.Row) (bool, error) {
			id, text, meta, vector := r.Key[0].(string), r.Old[0].(string), r.Old[1].([]byte), r.Old[2].([]byte)
			if !s.stale([]byte(text)) && !s.stale(meta) && (vector == nil || !s.stale(vector)) {
				return false, nil
			}
			t, err1 := s.keys.Open([]byte(text), seal.MemoryAAD(id, "text"))
			m, err2 := s.keys.Open(meta, seal.MemoryAAD(id, "metadata"))
			var vec []byte
			var err3 error
			if vector != nil {
				vec, err3 = s.keys.Open(vector, seal.MemoryAAD(id, "vector"))
				vec = s.keys.Seal(vec, seal.MemoryAAD(id, "vector"))
			}
			if err := errors.Join(err1, err2, err3); err != nil {
				return false, fmt.Errorf("memory %s: %w", id, err)
			}
			st, terms, sm := s.sealMemory(id, string(t), m)
			r.Set = []any{st, terms, sm, vec}
			return true, nil
		}}
}

// resealValue re-seals one stale sealed column; false when it is under the current key.
func (s *Store) resealValue(r *seal.Row, b, aad []byte, format string, args ...any) (bool, error) {
	if !s.stale(b) {
		return false, nil
	}
	plain, err := s.keys.Open(b, aad)
	if err != nil {
		return false, fmt.Errorf(format+": %w", append(args, err)...)
	}
	r.Set = []any{s.keys.Seal(plain, aad)}
	return true, nil
}

// resealTable re-seals every stale row of t (seal.Pass).
func (s *Store) resealTable(ctx context.Context, t *resealTable) (done, changed int, err error) {
	return seal.Pass(ctx, seal.Table{
		Start: t.start,
		Page: func(ctx context.Context, after []any) ([]seal.Row, error) {
			return s.readRows(ctx, t, t.page, append(append([]any(nil), after...), seal.PassBatch)...)
		},
		One:    func(ctx context.Context, key []any) ([]seal.Row, error) { return s.readRows(ctx, t, t.one, key...) },
		Reseal: t.reseal,
		CAS:    func(ctx context.Context, rows []seal.Row) (int, [][]any, error) { return s.casRows(ctx, t, rows) },
	})
}

func (s *Store) readRows(ctx context.Context, t *resealTable, q string, args ...any) ([]seal.Row, error) {
	rows, err := s.db.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []seal.Row
	for rows.Next() {
		r, err := t.scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// casRows writes re-sealed rows, each in one compare-and-set, all in one transaction; it
// returns how many were written and the keys of those that had changed.
func (s *Store) casRows(ctx context.Context, t *resealTable, todo []seal.Row) (int, [][]any, error) {
	if s.race != nil {
		s.race(t.name)
	}
	var n int
	var changed [][]any
	err := s.db.BeginFunc(ctx, func(tx pgx.Tx) error {
		n, changed = 0, nil
		for _, r := range todo {
			tag, err := tx.Exec(ctx, t.update, append(append(append([]any(nil), r.Set...), r.Key...), r.Old...)...)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				changed = append(changed, r.Key)
			} else {
				n++
			}
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return n, changed, nil
}
