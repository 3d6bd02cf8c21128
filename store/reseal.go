package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/store/seal"
)

// Reseal runs while other processes write: the pass (seal.Pass) re-seals each row by a
// compare-and-set and reads again the rows that changed meanwhile. What is SQLite's
// here is how a table's rows are read and written: resealTable's statements.

// resealTable is how one table is re-sealed.
type resealTable struct {
	name   string // the table
	start  []any  // the key before every row
	page   string // rows after a key (the key's columns then LIMIT), in key order
	one    string // the row of one key
	update string // SET set... WHERE key... AND old... (compared as blobs, NULL equal to NULL)
	scan   func(*sql.Rows) (seal.Row, error)
	reseal func(*seal.Row) (stale bool, err error) // fills Set
}

func (s *SQLite) resealEntries(ctx context.Context) (int, int, error) {
	return s.resealTable(ctx, &resealTable{
		name:   "entries",
		start:  []any{int64(0), int64(0)},
		page:   `SELECT sid, seq, body, session FROM entries WHERE (sid, seq) > (?, ?) ORDER BY sid, seq LIMIT ?`,
		one:    `SELECT sid, seq, body, session FROM entries WHERE sid = ? AND seq = ?`,
		update: `UPDATE entries SET body = ? WHERE sid = ? AND seq = ? AND CAST(body AS BLOB) IS CAST(? AS BLOB) AND session IS ?`,
		scan: func(rows *sql.Rows) (seal.Row, error) {
			var sid, seq int64
			var session string
			var body []byte
			err := rows.Scan(&sid, &seq, &body, &session)
			return seal.Row{Key: []any{sid, seq}, Old: []any{body, session}}, err
		},
		reseal: func(r *seal.Row) (bool, error) {
			session, seq := r.Old[1].(string), r.Key[1].(int64)
			body, aad := r.Old[0].([]byte), seal.EntryAAD(session, seq)
			return s.resealValue(r, body, aad, "session %q entry %d", session, seq)
		},
	})
}

func (s *SQLite) resealKV(ctx context.Context) (int, int, error) {
	return s.resealTable(ctx, &resealTable{
		name:  "kv",
		start: []any{"", ""},
		page: `SELECT plugin, key, value FROM kv WHERE (plugin, key) > (?, ?) AND NOT (plugin = '` + seal.MarkerPlugin + `' AND key = '` + seal.MarkerKey + `')
			ORDER BY plugin, key LIMIT ?`,
		one:    `SELECT plugin, key, value FROM kv WHERE plugin = ? AND key = ?`,
		update: `UPDATE kv SET value = ? WHERE plugin = ? AND key = ? AND CAST(value AS BLOB) IS CAST(? AS BLOB)`,
		scan: func(rows *sql.Rows) (seal.Row, error) {
			var plugin, key string
			var value []byte
			err := rows.Scan(&plugin, &key, &value)
			return seal.Row{Key: []any{plugin, key}, Old: []any{value}}, err
		},
		reseal: func(r *seal.Row) (bool, error) {
			value, aad := r.Old[0].([]byte), seal.KVAAD(r.Key[0].(string), r.Key[1].(string))
			return s.resealValue(r, value, aad, "%s/%s", r.Key...)
		},
	})
}

// resealValue re-seals one stale sealed column; false when it is under the current key.
func (s *SQLite) resealValue(r *seal.Row, b, aad []byte, format string, args ...any) (bool, error) {
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

// resealMemories re-seals and re-indexes memories not sealed with the current key.
func (s *SQLite) resealMemories(ctx context.Context) (int, int, error) {
	return s.resealTable(ctx, &resealTable{
		name:  "memories",
		start: []any{""},
		page:  `SELECT id, text, metadata, vector FROM memories WHERE id > ? ORDER BY id LIMIT ?`,
		one:   `SELECT id, text, metadata, vector FROM memories WHERE id = ?`,
		update: `UPDATE memories SET text = ?, terms = ?, metadata = ?, vector = ? WHERE id = ?
			AND CAST(text AS BLOB) IS CAST(? AS BLOB) AND CAST(metadata AS BLOB) IS CAST(? AS BLOB) AND CAST(vector AS BLOB) IS CAST(? AS BLOB)`,
		scan: func(rows *sql.Rows) (seal.Row, error) {
			var id, text, meta string
			var vector []byte
			err := rows.Scan(&id, &text, &meta, &vector)
			return seal.Row{Key: []any{id}, Old: []any{text, meta, vector}}, err
		},
		reseal: func(r *seal.Row) (bool, error) {
			id, text, meta, vector := r.Key[0].(string), r.Old[0].(string), r.Old[1].(string), r.Old[2].([]byte)
			if !s.stale([]byte(text)) && !s.stale([]byte(meta)) && (vector == nil || !s.stale(vector)) {
				return false, nil
			}
			t, err1 := s.keys.Open([]byte(text), seal.MemoryAAD(id, "text"))
			m, err2 := s.keys.Open([]byte(meta), seal.MemoryAAD(id, "metadata"))
			e := memory.Entry{ID: id}
			err3 := s.openVector(&e, vector)
			if err := errors.Join(err1, err2, err3); err != nil {
				return false, fmt.Errorf("memory %s: %w", id, err)
			}
			st, terms, sm := s.sealMemory(id, string(t), m)
			r.Set = []any{st, terms, sm, s.sealVector(id, e.Vector)}
			return true, nil
		},
	})
}

// resealTable re-seals every stale row of t (seal.Pass), in transactions of the writer.
func (s *SQLite) resealTable(ctx context.Context, t *resealTable) (done, changed int, err error) {
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

func (s *SQLite) readRows(ctx context.Context, t *resealTable, q string, args ...any) ([]seal.Row, error) {
	rows, err := s.query(ctx, q, args...)
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
func (s *SQLite) casRows(ctx context.Context, t *resealTable, todo []seal.Row) (int, [][]any, error) {
	if s.race != nil {
		s.race(t.name)
	}
	var n int
	var changed [][]any
	err := s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		n, changed = 0, nil
		for _, r := range todo {
			res, err := tx.ExecContext(ctx, t.update, append(append(append([]any(nil), r.Set...), r.Key...), r.Old...)...)
			if err != nil {
				return err
			}
			if k, err := res.RowsAffected(); err != nil {
				return err
			} else if k == 0 {
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
