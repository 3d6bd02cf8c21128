package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/loop"
)

var _ loop.FeedbackStore = (*Store)(nil)

// AddFeedback stores feedback on a run (loop.FeedbackStore).
func (s *Store) AddFeedback(ctx context.Context, f loop.Feedback) error {
	_, err := s.db.Exec(ctx, `INSERT INTO feedback (session, run_id, agent, score, comment, time) VALUES ($1, $2, $3, $4, $5, $6)`,
		f.SessionID, f.RunID, f.Agent, f.Score, f.Comment, f.Time.UTC())
	if err != nil {
		return fmt.Errorf("add feedback on run %q of session %q: %w", f.RunID, f.SessionID, err)
	}
	return nil
}

// Feedback lists feedback given at or after since, oldest first.
func (s *Store) Feedback(ctx context.Context, since time.Time) ([]loop.Feedback, error) {
	rows, err := s.db.Query(ctx, `SELECT session, run_id, agent, score, comment, time FROM feedback WHERE time >= $1 ORDER BY time, id`, since.UTC())
	if err != nil {
		return nil, fmt.Errorf("list feedback: %w", err)
	}
	defer rows.Close()
	var out []loop.Feedback
	for rows.Next() {
		var f loop.Feedback
		if err := rows.Scan(&f.SessionID, &f.RunID, &f.Agent, &f.Score, &f.Comment, &f.Time); err != nil {
			return nil, fmt.Errorf("list feedback: %w", err)
		}
		out = append(out, f)
	}
	return out, rows.Err()
}
