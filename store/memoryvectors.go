package store

import (
	"context"
	"fmt"

	"github.com/agenthost/agenthost/memory"
)

var _ memory.Reindexer = (*SQLite)(nil)

// staleSQL is memory.Stale.Matches without After, for the arguments model, user, user.
const staleSQL = `(m.vector IS NULL OR m.vector_model <> ?) AND (? = '' OR m.owner = ?)`

// Stale returns the memories whose vector s.Model did not make, in id order (memory.Reindexer).
func (s *SQLite) Stale(ctx context.Context, q memory.Stale) ([]memory.Entry, error) {
	if err := s.watch.check(); err != nil {
		return nil, fmt.Errorf("stale memories: %w", err)
	}
	rows, err := s.query(ctx, `SELECT `+memoryColumns+` FROM memories m WHERE `+staleSQL+` AND m.id > ? ORDER BY m.id LIMIT ?`,
		q.Model, q.User, q.User, q.After, q.Max())
	if err != nil {
		return nil, fmt.Errorf("stale memories: %w", err)
	}
	defer rows.Close()
	var out []memory.Entry
	for rows.Next() {
		var e memory.Entry
		if err := s.scanMemory(rows, &e); err != nil {
			return nil, fmt.Errorf("stale memories: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// CountStale counts them (memory.Reindexer).
func (s *SQLite) CountStale(ctx context.Context, q memory.Stale) (int, error) {
	if err := s.watch.check(); err != nil {
		return 0, fmt.Errorf("stale memories: %w", err)
	}
	var n int
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM memories m WHERE `+staleSQL, q.Model, q.User, q.User).Scan(&n); err != nil {
		return 0, fmt.Errorf("stale memories: %w", err)
	}
	return n, nil
}

// SetVector stores a memory's vector (sealed with keys) and its model, and makes it a
// straggler of the vector index (vectorindex.go); the index of its words is not touched
// (the update trigger follows terms and scope only).
func (s *SQLite) SetVector(ctx context.Context, id string, v []float32, model string) error {
	vector := s.sealVector(id, v)
	err := s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		_, err := tx.ExecContext(ctx, `UPDATE memories SET vector = ?, vector_model = ?, list = NULL WHERE id = ?`, vector, model, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("set memory vector: %w", err)
	}
	return nil
}

// vectorModel is what the vector_model column keeps: the model only beside a vector.
func vectorModel(e memory.Entry) string {
	if e.Vector == nil {
		return ""
	}
	return e.VectorModel
}
