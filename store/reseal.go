package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/store/seal"
)

// Reseal runs while other processes write (`serve` beside `store rotate-key`). A row is
// read, re-sealed here, and written back only if it still holds what was read: one
// UPDATE ... WHERE the sealed columns are unchanged (a compare-and-set; a fresh nonce makes
// every write of a value differ, so "unchanged" means "not written since"). A row that
// changed meanwhile is skipped and read again after the pass; one that is gone, or now
// sealed with the current key by its writer, needs nothing more.

// resealBatch bounds one transaction of Reseal, so the writer is not held for long.
const resealBatch = 256

// resealRounds is how many times a row that keeps changing is read again before Reseal
// gives up on it (and says to run it again).
const resealRounds = 8

// resealPause is the wait before the first round of re-reading, doubled each round after
// (2.5 s over the 8 rounds).
const resealPause = 10 * time.Millisecond

// casRow is one row to re-seal: its key columns, the sealed columns as read, and what
// they become.
type casRow struct {
	key, old, set []any
}

// resealTable is how one table is re-sealed.
type resealTable struct {
	name   string // the table
	start  []any  // the key before every row
	page   string // rows after a key (the key's columns then LIMIT), in key order
	one    string // the row of one key
	update string // SET set... WHERE key... AND old... (compared as blobs, NULL equal to NULL)
	scan   func(*sql.Rows) (casRow, error)
	reseal func(*casRow) (stale bool, err error) // fills set
}

func (s *SQLite) resealEntries(ctx context.Context) (int, int, error) {
	return s.resealTable(ctx, &resealTable{
		name:   "entries",
		start:  []any{"", int64(0)},
		page:   `SELECT session, seq, body FROM entries WHERE (session, seq) > (?, ?) ORDER BY session, seq LIMIT ?`,
		one:    `SELECT session, seq, body FROM entries WHERE session = ? AND seq = ?`,
		update: `UPDATE entries SET body = ? WHERE session = ? AND seq = ? AND CAST(body AS BLOB) IS CAST(? AS BLOB)`,
		scan: func(rows *sql.Rows) (casRow, error) {
			var session string
			var seq int64
			var body []byte
			err := rows.Scan(&session, &seq, &body)
			return casRow{key: []any{session, seq}, old: []any{body}}, err
		},
		reseal: func(r *casRow) (bool, error) {
			body, aad := r.old[0].([]byte), seal.EntryAAD(r.key[0].(string), r.key[1].(int64))
			return s.resealValue(r, body, aad, "session %q entry %d", r.key...)
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
		scan: func(rows *sql.Rows) (casRow, error) {
			var plugin, key string
			var value []byte
			err := rows.Scan(&plugin, &key, &value)
			return casRow{key: []any{plugin, key}, old: []any{value}}, err
		},
		reseal: func(r *casRow) (bool, error) {
			value, aad := r.old[0].([]byte), seal.KVAAD(r.key[0].(string), r.key[1].(string))
			return s.resealValue(r, value, aad, "%s/%s", r.key...)
		},
	})
}

// resealValue re-seals one stale sealed column; false when it is under the current key.
func (s *SQLite) resealValue(r *casRow, b, aad []byte, format string, args ...any) (bool, error) {
	if !s.stale(b) {
		return false, nil
	}
	plain, err := s.keys.Open(b, aad)
	if err != nil {
		return false, fmt.Errorf(format+": %w", append(args, err)...)
	}
	r.set = []any{s.keys.Seal(plain, aad)}
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
		scan: func(rows *sql.Rows) (casRow, error) {
			var id, text, meta string
			var vector []byte
			err := rows.Scan(&id, &text, &meta, &vector)
			return casRow{key: []any{id}, old: []any{text, meta, vector}}, err
		},
		reseal: func(r *casRow) (bool, error) {
			id, text, meta, vector := r.key[0].(string), r.old[0].(string), r.old[1].(string), r.old[2].([]byte)
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
			r.set = []any{st, terms, sm, s.sealVector(id, e.Vector)}
			return true, nil
		},
	})
}

// resealTable re-seals every stale row of a table: a pass in key order, then the rows
// that changed while it ran, read again, up to resealRounds times. It returns how many
// rows it re-sealed and how many it found changed since it read them.
func (s *SQLite) resealTable(ctx context.Context, t *resealTable) (done, changed int, err error) {
	var retry [][]any // keys of the rows that changed since they were read
	for after := t.start; ; {
		batch, err := s.readRows(ctx, t, t.page, append(append([]any(nil), after...), resealBatch)...)
		if err != nil || len(batch) == 0 {
			if err == nil {
				break
			}
			return done, changed, err
		}
		after = batch[len(batch)-1].key
		n, ch, err := s.casRows(ctx, t, batch)
		done, changed, retry = done+n, changed+len(ch), append(retry, ch...)
		if err != nil {
			return done, changed, err
		}
	}
	for round := 1; len(retry) > 0; round++ {
		if round > resealRounds {
			return done, changed, fmt.Errorf("%d row(s) changed each of the %d times they were re-sealed (a process still sealing with an older key?): run it again", len(retry), resealRounds)
		}
		select { // a writer still on the old key gets time to read the new one (serve polls every 2 s)
		case <-ctx.Done():
			return done, changed, ctx.Err()
		case <-time.After(resealPause << (round - 1)):
		}
		var again []casRow
		for _, key := range retry {
			rows, err := s.readRows(ctx, t, t.one, key...)
			if err != nil {
				return done, changed, err
			}
			again = append(again, rows...) // none: deleted meanwhile
		}
		n, ch, err := s.casRows(ctx, t, again)
		done, changed, retry = done+n, changed+len(ch), ch
		if err != nil {
			return done, changed, err
		}
	}
	return done, changed, nil
}

func (s *SQLite) readRows(ctx context.Context, t *resealTable, q string, args ...any) ([]casRow, error) {
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []casRow
	for rows.Next() {
		r, err := t.scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// casRows re-seals the stale rows of batch, each in one compare-and-set, all in one
// transaction; it returns how many were written and the keys of those that had changed.
func (s *SQLite) casRows(ctx context.Context, t *resealTable, batch []casRow) (int, [][]any, error) {
	var todo []casRow
	for i := range batch {
		stale, err := t.reseal(&batch[i])
		if err != nil {
			return 0, nil, err
		}
		if stale {
			todo = append(todo, batch[i])
		}
	}
	if len(todo) == 0 {
		return 0, nil, nil
	}
	if s.race != nil {
		s.race(t.name)
	}
	var n int
	var changed [][]any
	err := s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		n, changed = 0, nil
		for _, r := range todo {
			res, err := tx.ExecContext(ctx, t.update, append(append(append([]any(nil), r.set...), r.key...), r.old...)...)
			if err != nil {
				return err
			}
			if k, err := res.RowsAffected(); err != nil {
				return err
			} else if k == 0 {
				changed = append(changed, r.key)
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
