package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/store/seal"
	"github.com/jackc/pgx/v5"
)

// Reseal runs while other processes write, as the SQLite store's does (store/reseal.go):
// a row is read, re-sealed, and written back only if its sealed columns still hold what
// was read (one UPDATE ... WHERE ... IS NOT DISTINCT FROM: a compare-and-set). A row that
// changed meanwhile is skipped and read again after the pass, up to resealRounds times. No
// row is locked while Reseal works on it, so serving is not held up.

// resealBatch bounds one transaction of Reseal.
const resealBatch = 256

// resealRounds is how many times a row that keeps changing is read again.
const resealRounds = 8

// resealPause is the wait before the first round of re-reading, doubled each round after
// (2.5 s over the 8 rounds).
const resealPause = 10 * time.Millisecond

// casRow is one row to re-seal: its key columns, the sealed columns as read, and what
// they become.
type casRow struct {
	key, old, set []any
}

type resealTable struct {
	name   string
	start  []any  // the key before every row
	page   string // rows after a key ($1.. the key, then the limit), in key order
	one    string // the row of one key
	update string // SET set... WHERE key... AND old... (NULL equal to NULL)
	scan   func(pgx.Rows) (casRow, error)
	reseal func(*casRow) (stale bool, err error) // fills set
}

func (s *Store) entriesTable() *resealTable {
	return &resealTable{name: "entries", start: []any{"", int64(0)},
		page:   `SELECT session, seq, body FROM entries WHERE (session, seq) > ($1, $2) ORDER BY session, seq LIMIT $3`,
		one:    `SELECT session, seq, body FROM entries WHERE session = $1 AND seq = $2`,
		update: `UPDATE entries SET body = $1 WHERE session = $2 AND seq = $3 AND body = $4`,
		scan: func(rows pgx.Rows) (casRow, error) {
			var session string
			var seq int64
			var body []byte
			err := rows.Scan(&session, &seq, &body)
			return casRow{key: []any{session, seq}, old: []any{body}}, err
		},
		reseal: func(r *casRow) (bool, error) {
			return s.resealValue(r, r.old[0].([]byte), seal.EntryAAD(r.key[0].(string), r.key[1].(int64)), "session %q entry %d", r.key...)
		}}
}

func (s *Store) kvTable() *resealTable {
	return &resealTable{name: "kv", start: []any{"", ""},
		page: `SELECT plugin, key, value FROM kv WHERE (plugin, key) > ($1, $2) AND NOT (plugin = '` + seal.MarkerPlugin + `' AND key = '` + seal.MarkerKey + `')
			ORDER BY plugin, key LIMIT $3`,
		one:    `SELECT plugin, key, value FROM kv WHERE plugin = $1 AND key = $2`,
		update: `UPDATE kv SET value = $1 WHERE plugin = $2 AND key = $3 AND value = $4`,
		scan: func(rows pgx.Rows) (casRow, error) {
			var plugin, key string
			var value []byte
			err := rows.Scan(&plugin, &key, &value)
			return casRow{key: []any{plugin, key}, old: []any{value}}, err
		},
		reseal: func(r *casRow) (bool, error) {
			return s.resealValue(r, r.old[0].([]byte), seal.KVAAD(r.key[0].(string), r.key[1].(string)), "%s/%s", r.key...)
		}}
}

func (s *Store) memoriesTable() *resealTable {
	return &resealTable{name: "memories", start: []any{""},
		page: `SELECT id, text, metadata, vector FROM memories WHERE id > $1 ORDER BY id LIMIT $2`,
		one:  `SELECT id, text, metadata, vector FROM memories WHERE id = $1`,
		update: `UPDATE memories SET text = $1, terms = $2, metadata = $3, vector = $4 WHERE id = $5
			AND text = $6 AND metadata = $7 AND vector IS NOT DISTINCT FROM $8`,
		scan: func(rows pgx.Rows) (casRow, error) {
			var id, text string
			var meta, vector []byte
			err := rows.Scan(&id, &text, &meta, &vector)
			return casRow{key: []any{id}, old: []any{text, meta, vector}}, err
		},
		reseal: func(r *casRow) (bool, error) {
			id, text, meta, vector := r.key[0].(string), r.old[0].(string), r.old[1].([]byte), r.old[2].([]byte)
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
			r.set = []any{st, terms, sm, vec}
			return true, nil
		}}
}

// resealValue re-seals one stale sealed column; false when it is under the current key.
func (s *Store) resealValue(r *casRow, b, aad []byte, format string, args ...any) (bool, error) {
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

// resealTable re-seals every stale row of a table: a pass in key order, then the rows
// that changed while it ran, read again, up to resealRounds times. It returns how many
// rows it re-sealed and how many it found changed since it read them.
func (s *Store) resealTable(ctx context.Context, t *resealTable) (done, changed int, err error) {
	var retry [][]any
	for after := t.start; ; {
		batch, err := s.readRows(ctx, t, t.page, append(append([]any(nil), after...), resealBatch)...)
		if err != nil {
			return done, changed, err
		}
		if len(batch) == 0 {
			break
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

func (s *Store) readRows(ctx context.Context, t *resealTable, q string, args ...any) ([]casRow, error) {
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, unavailable(err)
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
	return out, unavailable(rows.Err())
}

// casRows re-seals the stale rows of batch, each in one compare-and-set, all in one
// transaction; it returns how many were written and the keys of those that had changed.
func (s *Store) casRows(ctx context.Context, t *resealTable, batch []casRow) (int, [][]any, error) {
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
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		n, changed = 0, nil
		for _, r := range todo {
			tag, err := tx.Exec(ctx, t.update, append(append(append([]any(nil), r.set...), r.key...), r.old...)...)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				changed = append(changed, r.key)
			} else {
				n++
			}
		}
		return nil
	})
	if err != nil {
		return 0, nil, unavailable(err)
	}
	return n, changed, nil
}
