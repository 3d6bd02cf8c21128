package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/store/seal"
)

var _ memory.Store = (*SQLite)(nil)

const memoryColumns = `m.id, m.owner, m.agent, m.kind, m.text, m.metadata, m.session, m.run_id, m.created, m.updated, m.vector, m.vector_model`

// AddMemory stores an entry (memory.Store).
func (s *SQLite) AddMemory(ctx context.Context, e memory.Entry) error {
	if err := memory.Check(e); err != nil {
		return err
	}
	meta, err := json.Marshal(e.Metadata)
	if err != nil {
		return fmt.Errorf("add memory: %w", err)
	}
	text, terms, metaCol := s.sealMemory(e.ID, e.Text, meta)
	vector := s.sealVector(e.ID, e.Vector)
	err = s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO memories (id, owner, agent, scope, kind, text, metadata, session, run_id, created, updated, terms, vector, vector_model)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, e.ID, e.User, e.Agent, scopeToken(e.User, e.Agent), string(e.Kind), text, metaCol, e.Session, e.Run,
			e.Created.UTC().Format(timeText), e.Updated.UTC().Format(timeText), terms, vector, vectorModel(e))
		return err
	})
	if err != nil {
		return fmt.Errorf("add memory: %w", err)
	}
	return nil
}

// SearchMemory ranks the entries q may see by FTS5's bm25 over memory.Terms of q.Text
// (memory.Store). The match is limited to the scopes q may see inside the index (so
// only their entries are ranked), and the visibility rule is applied again in the WHERE
// clause, so a LIMIT never fills up with entries the user may not see.
func (s *SQLite) SearchMemory(ctx context.Context, q memory.Query) ([]memory.Hit, error) {
	hits, err := s.searchWords(ctx, q)
	if err != nil || q.Vector == nil {
		return hits, err
	}
	similar, err := s.searchVector(ctx, q)
	if err != nil {
		return nil, err
	}
	return memory.Fuse(hits, similar, q.Max()), nil
}

// visibleSQL is memory.Query.Visible and its kind filter, for the arguments user, user,
// agent, agent, agent, kind, kind.
const visibleSQL = `((m.owner = ? AND ? <> '' AND (m.agent = '' OR m.agent = ?)) OR (m.owner = '' AND m.agent = ? AND ? <> ''))
  AND (? = '' OR m.kind = ?)`

// ListMemory lists the entries f selects, newest first (memory.Store).
func (s *SQLite) ListMemory(ctx context.Context, f memory.Filter) ([]memory.Entry, error) {
	if err := s.watch.check(); err != nil {
		return nil, fmt.Errorf("list memory: %w", err)
	}
	where, args := memoryWhere(f)
	lim := -1
	if f.Limit > 0 {
		lim = f.Limit
	}
	rows, err := s.query(ctx, `SELECT `+memoryColumns+` FROM memories m WHERE `+where+` ORDER BY m.updated DESC, m.rowid DESC LIMIT ?`,
		append(args, lim)...)
	if err != nil {
		return nil, fmt.Errorf("list memory: %w", err)
	}
	defer rows.Close()
	var out []memory.Entry
	for rows.Next() {
		var e memory.Entry
		if err := s.scanMemory(rows, &e); err != nil {
			return nil, fmt.Errorf("list memory: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// DeleteMemory deletes the entries f selects (memory.Store), and answers once their bytes
// are gone from the database and its -wal file (erase.go).
func (s *SQLite) DeleteMemory(ctx context.Context, f memory.Filter) (int, error) {
	if f.Empty() {
		return 0, memory.ErrEmptyFilter
	}
	where, args := memoryWhere(f)
	var n int64
	err := s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM memories WHERE rowid IN (SELECT m.rowid FROM memories m WHERE `+where+`)`, args...)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		_, err = tx.ExecContext(ctx, dropOrphanIndexes)
		return err
	})
	if err == nil && n > 0 {
		err = s.scrub(ctx) // erase.go: the -wal file still holds the memories' pages
	}
	if err != nil {
		return 0, fmt.Errorf("delete memory: %w", err)
	}
	return int(n), nil
}

// memoryWhere is memory.Filter.Selects in SQL.
func memoryWhere(f memory.Filter) (string, []any) {
	if f.ID != "" {
		return `m.id = ? AND (? = '' OR m.owner = ?)`, []any{f.ID, f.User, f.User}
	}
	if f.Empty() {
		return `0`, nil
	}
	return `m.owner = ? AND (? = '' OR m.agent = ?) AND (? = '' OR m.kind = ?)`, []any{f.User, f.Agent, f.Agent, string(f.Kind), string(f.Kind)}
}

func (s *SQLite) scanMemory(rows *sql.Rows, e *memory.Entry, extra ...any) error {
	var kind, meta, created, updated string
	var vector []byte
	if err := rows.Scan(append([]any{&e.ID, &e.User, &e.Agent, &kind, &e.Text, &meta, &e.Session, &e.Run, &created, &updated, &vector, &e.VectorModel}, extra...)...); err != nil {
		return err
	}
	if err := s.openVector(e, vector); err != nil {
		return err
	}
	text, err := s.keys.Open([]byte(e.Text), seal.MemoryAAD(e.ID, "text"))
	if err != nil {
		return fmt.Errorf("memory %s: %w", e.ID, err)
	}
	m, err := s.keys.Open([]byte(meta), seal.MemoryAAD(e.ID, "metadata"))
	if err != nil {
		return fmt.Errorf("memory %s: %w", e.ID, err)
	}
	e.Text, meta = string(text), string(m)
	e.Kind, e.Created, e.Updated = memory.Kind(kind), parseTime(created), parseTime(updated)
	if meta != "" && meta != "null" {
		if err := json.Unmarshal([]byte(meta), &e.Metadata); err != nil {
			return fmt.Errorf("memory %s: metadata: %w", e.ID, err)
		}
	}
	return nil
}

// scopeToken is the one index token of an entry's (user, agent) pair: a hash, so that
// it is one token whatever the names hold (spaces, punctuation, other scripts) and no
// name can be written to look like another's.
func scopeToken(user, agent string) string {
	h := sha256.Sum256([]byte(user + "\x00" + agent))
	return "s" + hex.EncodeToString(h[:16])
}

// visibleScopes are the scope tokens a search by q may match (memory.Query.Visible).
func visibleScopes(q memory.Query) []string {
	var out []string
	if q.User != "" {
		out = append(out, scopeToken(q.User, ""))
		if q.Agent != "" {
			out = append(out, scopeToken(q.User, q.Agent))
		}
	}
	if q.Agent != "" {
		out = append(out, scopeToken("", q.Agent))
	}
	return out
}

// sealMemory is what a memory's text, index terms and metadata are stored as: as they are
// without keys; sealed, with keyed hashes of its words as terms, with keys.
func (s *SQLite) sealMemory(id, text string, meta []byte) (string, string, string) {
	if s.keys == nil {
		return text, text, string(meta)
	}
	return string(s.keys.Seal([]byte(text), seal.MemoryAAD(id, "text"))), s.keys.IndexText(memory.Words(text)),
		string(s.keys.Seal(meta, seal.MemoryAAD(id, "metadata")))
}

// sealVector is how a memory's vector is stored: nil for none, sealed with keys.
func (s *SQLite) sealVector(id string, v []float32) []byte {
	if v == nil {
		return nil
	}
	return s.keys.Seal(memory.EncodeVector(v), seal.MemoryAAD(id, "vector"))
}

func (s *SQLite) openVector(e *memory.Entry, b []byte) error {
	if b == nil {
		return nil
	}
	plain, err := s.keys.Open(b, seal.MemoryAAD(e.ID, "vector"))
	if err != nil {
		return fmt.Errorf("memory %s: %w", e.ID, err)
	}
	if e.Vector, err = memory.DecodeVector(plain); err != nil {
		return fmt.Errorf("memory %s: %w", e.ID, err)
	}
	return nil
}
