package store

import (
	"context"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/loop"
)

var _ loop.FeedbackStore = (*SQLite)(nil)

// AddFeedback stores feedback on a run (loop.FeedbackStore).
func (s *SQLite) AddFeedback(ctx context.Context, f loop.Feedback) error {
	err := s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO feedback (session, run_id, agent, score, comment, time) VALUES (?, ?, ?, ?, ?, ?)`,
			f.SessionID, f.RunID, f.Agent, f.Score, f.Comment, f.Time.UTC().Format(timeText))
		return err
	})
	if err != nil {
		return fmt.Errorf("add feedback on run %q of session %q: %w", f.RunID, f.SessionID, err)
	}
	return nil
}

// Feedback lists feedback given at or after since, oldest first.
func (s *SQLite) Feedback(ctx context.Context, since time.Time) ([]loop.Feedback, error) {
	if err := s.watch.check(); err != nil {
		return nil, fmt.Errorf("list feedback: %w", err)
	}
	rows, err := s.query(ctx, `SELECT session, run_id, agent, score, comment, time FROM feedback WHERE time >= ? ORDER BY time, id`,
		since.UTC().Format(timeText))
	if err != nil {
		return nil, fmt.Errorf("list feedback: %w", err)
	}
	defer rows.Close()
	var out []loop.Feedback
	for rows.Next() {
		var f loop.Feedback
		var at string
		if err := rows.Scan(&f.SessionID, &f.RunID, &f.Agent, &f.Score, &f.Comment, &at); err != nil {
			return nil, fmt.Errorf("list feedback: %w", err)
		}
		f.Time = parseTime(at)
		out = append(out, f)
	}
	return out, rows.Err()
}
