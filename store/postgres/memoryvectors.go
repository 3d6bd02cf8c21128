package postgres

import (
	"context"
	"fmt"

	"github.com/agenthost/agenthost/memory"
)

var _ memory.Reindexer = (*Store)(nil)

// staleSQL is memory.Stale.Matches without After, for the arguments $1 model, $2 user.
const staleSQL = `(vector IS NULL OR vector_model <> $1) AND ($2 = '' OR owner = $2)`

// Stale returns the memories whose vector q.Model did not make, in id order
// (memory.Reindexer).
func (s *Store) Stale(ctx context.Context, q memory.Stale) ([]memory.Entry, error) {
	rows, err := s.db.Query(ctx, `SELECT `+readColumns+` FROM memories WHERE `+staleSQL+` AND id COLLATE "C" > $3 ORDER BY id COLLATE "C" LIMIT $4`,
		q.Model, q.User, q.After, q.Max())
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
func (s *Store) CountStale(ctx context.Context, q memory.Stale) (int, error) {
	var n int
	if err := s.db.QueryRow(ctx, `SELECT COUNT(*) FROM memories WHERE `+staleSQL, q.Model, q.User).Scan(&n); err != nil {
		return 0, fmt.Errorf("stale memories: %w", err)
	}
	return n, nil
}

// SetVector stores a memory's vector (sealed with keys) and its model (memory.Reindexer).
func (s *Store) SetVector(ctx context.Context, id string, v []float32, model string) error {
	if _, err := s.db.Exec(ctx, `UPDATE memories SET vector = $1, vector_model = $2, list = NULL WHERE id = $3`, s.sealVector(id, v), model, id); err != nil {
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
