package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/agenthost/agenthost/memory"
)

var _ memory.Store = (*SQLite)(nil)

const memoryColumns = `m.id, m.owner, m.agent, m.kind, m.text, m.metadata, m.session, m.run_id, m.created, m.updated`

// AddMemory stores an entry (memory.Store).
func (s *SQLite) AddMemory(ctx context.Context, e memory.Entry) error {
	if err := memory.Check(e); err != nil {
		return err
	}
	meta, err := json.Marshal(e.Metadata)
	if err != nil {
		return fmt.Errorf("add memory: %w", err)
	}
	err = s.w.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO memories (id, owner, agent, scope, kind, text, metadata, session, run_id, created, updated)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, e.ID, e.User, e.Agent, scopeToken(e.User, e.Agent), string(e.Kind), e.Text, string(meta), e.Session, e.Run,
			e.Created.UTC().Format(feedbackTime), e.Updated.UTC().Format(feedbackTime))
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
	terms := memory.Terms(q.Text)
	scopes := visibleScopes(q)
	if len(terms) == 0 || len(scopes) == 0 {
		return nil, nil
	}
	if err := s.watch.check(); err != nil {
		return nil, fmt.Errorf("search memory: %w", err)
	}
	match := "{scope} : (" + memory.FTS5Query(scopes) + ") AND {text} : (" + memory.FTS5Query(terms) + ")"
	rows, err := s.db.QueryContext(ctx, `SELECT `+memoryColumns+`, -bm25(memories_fts, 1.0, 0.0)
FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid
WHERE memories_fts MATCH ?
  AND ((m.owner = ? AND ? <> '' AND (m.agent = '' OR m.agent = ?)) OR (m.owner = '' AND m.agent = ? AND ? <> ''))
  AND (? = '' OR m.kind = ?)
ORDER BY bm25(memories_fts, 1.0, 0.0), m.updated DESC LIMIT ?`,
		match, q.User, q.User, q.Agent, q.Agent, q.Agent, string(q.Kind), string(q.Kind), q.Max())
	if err != nil {
		return nil, fmt.Errorf("search memory: %w", err)
	}
	defer rows.Close()
	var out []memory.Hit
	for rows.Next() {
		var h memory.Hit
		if err := scanMemory(rows, &h.Entry, &h.Score); err != nil {
			return nil, fmt.Errorf("search memory: %w", err)
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

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
	rows, err := s.db.QueryContext(ctx, `SELECT `+memoryColumns+` FROM memories m WHERE `+where+` ORDER BY m.updated DESC, m.rowid DESC LIMIT ?`,
		append(args, lim)...)
	if err != nil {
		return nil, fmt.Errorf("list memory: %w", err)
	}
	defer rows.Close()
	var out []memory.Entry
	for rows.Next() {
		var e memory.Entry
		if err := scanMemory(rows, &e); err != nil {
			return nil, fmt.Errorf("list memory: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// DeleteMemory deletes the entries f selects (memory.Store).
func (s *SQLite) DeleteMemory(ctx context.Context, f memory.Filter) (int, error) {
	if f.Empty() {
		return 0, memory.ErrEmptyFilter
	}
	where, args := memoryWhere(f)
	var n int64
	err := s.w.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM memories WHERE rowid IN (SELECT m.rowid FROM memories m WHERE `+where+`)`, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
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

func scanMemory(rows *sql.Rows, e *memory.Entry, extra ...any) error {
	var kind, meta, created, updated string
	if err := rows.Scan(append([]any{&e.ID, &e.User, &e.Agent, &kind, &e.Text, &meta, &e.Session, &e.Run, &created, &updated}, extra...)...); err != nil {
		return err
	}
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
