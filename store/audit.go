package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/audit"
)

var _ audit.Store = (*SQLite)(nil)

// AppendAudit chains r after the last record and stores it in one write transaction:
// the process's writes go through one connection in order, and another process's wait
// for SQLite's write lock, so no two appends read the same last record.
func (s *SQLite) AppendAudit(ctx context.Context, r audit.Record) (audit.Record, error) {
	err := s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		var prev audit.Record
		var at string
		err := tx.QueryRowContext(ctx, `SELECT seq, hash, time FROM audit ORDER BY seq DESC LIMIT 1`).Scan(&prev.Seq, &prev.Hash, &at)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			audit.Chain(&r, nil)
		case err != nil:
			return err
		default:
			audit.Chain(&r, &prev)
		}
		return insertAudit(ctx, tx, r)
	})
	if err != nil {
		return audit.Record{}, fmt.Errorf("append audit record: %w", err)
	}
	return r, nil
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func insertAudit(ctx context.Context, tx execer, r audit.Record) error {
	detail, _ := json.Marshal(r.Detail)
	_, err := tx.ExecContext(ctx, `INSERT INTO audit (seq, time, action, actor, target, detail, prev, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		r.Seq, r.Time.Format(timeText), r.Action, r.Actor, r.Target, string(detail), r.Prev, r.Hash)
	return err
}

// writeGenesis begins an empty audit log with its genesis record (audit.Genesis). A log
// that holds records already (begun before genesis records) is left as it is: nothing
// can be put before its record 1 without breaking its chain; `audit verify` reports it.
func writeGenesis(ctx context.Context, tx *sql.Tx) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM audit`).Scan(&n); err != nil || n > 0 {
		return err
	}
	return insertAudit(ctx, tx, audit.Genesis(time.Now()))
}

// Audit lists records after seq after, oldest first (audit.Store).
func (s *SQLite) Audit(ctx context.Context, after int64, limit int) ([]audit.Record, error) {
	if err := s.watch.check(); err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.query(ctx, `SELECT seq, time, action, actor, target, detail, prev, hash FROM audit WHERE seq > ? ORDER BY seq LIMIT ?`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	defer rows.Close()
	var out []audit.Record
	for rows.Next() {
		var r audit.Record
		var at, detail string
		if err := rows.Scan(&r.Seq, &at, &r.Action, &r.Actor, &r.Target, &detail, &r.Prev, &r.Hash); err != nil {
			return nil, fmt.Errorf("read audit log: %w", err)
		}
		r.Time = parseTime(at)
		if detail != "null" {
			if err := json.Unmarshal([]byte(detail), &r.Detail); err != nil {
				return nil, fmt.Errorf("audit record %d: detail: %w", r.Seq, err)
			}
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
