package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/store/seal"
	"github.com/jackc/pgx/v5"
)

var _ memory.Store = (*Store)(nil)

const memoryColumns = `id, owner, agent, kind, text, metadata, session, run_id, created, updated`

// readColumns are memoryColumns, the vector and its model, as scanMemory reads them.
const readColumns = memoryColumns + `, vector, vector_model`

// AddMemory stores an entry (memory.Store).
func (s *Store) AddMemory(ctx context.Context, e memory.Entry) error {
	if err := memory.Check(e); err != nil {
		return err
	}
	meta, err := json.Marshal(e.Metadata)
	if err != nil {
		return fmt.Errorf("add memory: %w", err)
	}
	text, terms, meta := s.sealMemory(e.ID, e.Text, meta)
	_, err = s.db.Exec(ctx, `INSERT INTO memories (`+memoryColumns+`, terms, vector, vector_model) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		e.ID, e.User, e.Agent, string(e.Kind), text, meta, e.Session, e.Run, e.Created.UTC(), e.Updated.UTC(), terms, s.sealVector(e.ID, e.Vector), vectorModel(e))
	if err != nil {
		return fmt.Errorf("add memory: %w", err)
	}
	return nil
}

// SearchMemory ranks the entries q may see by ts_rank over memory.Terms of q.Text
// (memory.Store); the visibility rule is in the WHERE clause, as in the SQLite store.
func (s *Store) SearchMemory(ctx context.Context, q memory.Query) ([]memory.Hit, error) {
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

// ListMemory lists the entries f selects, newest first (memory.Store).
func (s *Store) ListMemory(ctx context.Context, f memory.Filter) ([]memory.Entry, error) {
	where, args := memoryWhere(f)
	q := `SELECT ` + readColumns + ` FROM memories WHERE ` + where + ` ORDER BY updated DESC, id DESC`
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := s.db.Query(ctx, q, args...)
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

// DeleteMemory deletes the entries f selects (memory.Store).
func (s *Store) DeleteMemory(ctx context.Context, f memory.Filter) (int, error) {
	if f.Empty() {
		return 0, memory.ErrEmptyFilter
	}
	where, args := memoryWhere(f)
	var n int64
	// With the memories goes the index of every scope left without any (its centroids
	// are averages of their vectors), under the lock an index activation takes.
	err := s.db.BeginFunc(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(indexLock)); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM memories WHERE `+where, args...)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		n = tag.RowsAffected()
		_, err = tx.Exec(ctx, `DELETE FROM memory_index i WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.owner = i.owner AND m.agent = i.agent)`)
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
		return `id = $1 AND ($2 = '' OR owner = $2)`, []any{f.ID, f.User}
	}
	if f.Empty() {
		return `false`, nil
	}
	return `owner = $1 AND ($2 = '' OR agent = $2) AND ($3 = '' OR kind = $3)`, []any{f.User, f.Agent, string(f.Kind)}
}

func (s *Store) scanMemory(rows pgx.Rows, e *memory.Entry, extra ...any) error {
	var kind string
	var meta, vector []byte
	if err := rows.Scan(append([]any{&e.ID, &e.User, &e.Agent, &kind, &e.Text, &meta, &e.Session, &e.Run, &e.Created, &e.Updated, &vector, &e.VectorModel}, extra...)...); err != nil {
		return err
	}
	if vector != nil {
		plain, err := s.keys.Open(vector, seal.MemoryAAD(e.ID, "vector"))
		if err != nil {
			return fmt.Errorf("memory %s: %w", e.ID, err)
		}
		if e.Vector, err = memory.DecodeVector(plain); err != nil {
			return fmt.Errorf("memory %s: %w", e.ID, err)
		}
	}
	text, err := s.keys.Open([]byte(e.Text), seal.MemoryAAD(e.ID, "text"))
	if err != nil {
		return fmt.Errorf("memory %s: %w", e.ID, err)
	}
	if meta, err = s.keys.Open(meta, seal.MemoryAAD(e.ID, "metadata")); err != nil {
		return fmt.Errorf("memory %s: %w", e.ID, err)
	}
	e.Text = string(text)
	e.Kind, e.Created, e.Updated = memory.Kind(kind), e.Created.UTC(), e.Updated.UTC()
	if len(meta) > 0 && string(meta) != "null" {
		if err := json.Unmarshal(meta, &e.Metadata); err != nil {
			return fmt.Errorf("memory %s: metadata: %w", e.ID, err)
		}
	}
	return nil
}

// sealMemory is what a memory's text, index terms and metadata are stored as (the
// SQLite store's rule: as they are without keys; sealed, with keyed word hashes as
// terms, with keys).
func (s *Store) sealMemory(id, text string, meta []byte) (string, string, []byte) {
	if s.keys == nil {
		return text, text, meta
	}
	return string(s.keys.Seal([]byte(text), seal.MemoryAAD(id, "text"))), s.keys.IndexText(memory.Words(text)),
		s.keys.Seal(meta, seal.MemoryAAD(id, "metadata"))
}

// sealVector is how a memory's vector is stored: nil for none, sealed with keys.
func (s *Store) sealVector(id string, v []float32) []byte {
	if v == nil {
		return nil
	}
	return s.keys.Seal(memory.EncodeVector(v), seal.MemoryAAD(id, "vector"))
}
