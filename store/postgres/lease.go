package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agenthost/agenthost/loop"
)

// Leases: one row per session whose run is live (loop.Leaser). Taking one reads and
// replaces the row under the session's advisory lock, so two processes taking one
// session are ordered.

// fenceTx refuses, under the session's advisory lock (so no lease change interleaves), a
// write whose fence is not the session's lease (loop/fence.go).
func fenceTx(ctx context.Context, tx pgx.Tx, session string) error {
	f, fenced := loop.FenceOf(ctx, session)
	if !fenced {
		return nil
	}
	var held loop.Lease
	err := tx.QueryRow(ctx, `SELECT session, run_id, pid, host, instance, heartbeat FROM leases WHERE session = $1`, session).
		Scan(&held.SessionID, &held.RunID, &held.PID, &held.Host, &held.Instance, &held.Heartbeat)
	if errors.Is(err, pgx.ErrNoRows) {
		return loop.FenceError(f, held, false)
	}
	if err != nil {
		return err
	}
	if !held.Same(f) {
		return loop.FenceError(f, held, true)
	}
	return nil
}

// AcquireLease implements loop.Leaser.
func (s *Store) AcquireLease(ctx context.Context, l loop.Lease, alive func(loop.Lease) bool) (loop.Lease, error) {
	var held loop.Lease
	err := s.db.BeginFunc(ctx, func(tx pgx.Tx) error {
		if err := lockSession(ctx, tx, l.SessionID); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `SELECT session, run_id, pid, host, instance, heartbeat FROM leases WHERE session = $1`, l.SessionID).
			Scan(&held.SessionID, &held.RunID, &held.PID, &held.Host, &held.Instance, &held.Heartbeat)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		default:
			if !held.Same(l) && alive(held) {
				return loop.ErrSessionBusy
			}
		}
		_, err = tx.Exec(ctx, `INSERT INTO leases (session, run_id, pid, host, instance, heartbeat) VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (session) DO UPDATE SET run_id = excluded.run_id, pid = excluded.pid, host = excluded.host,
			instance = excluded.instance, heartbeat = excluded.heartbeat`,
			l.SessionID, l.RunID, l.PID, l.Host, l.Instance, l.Heartbeat.UTC())
		return err
	})
	if errors.Is(err, loop.ErrSessionBusy) {
		return held, loop.ErrSessionBusy
	}
	if err != nil {
		return loop.Lease{}, fmt.Errorf("lease session %q: %w", l.SessionID, err)
	}
	return held, nil
}

// RenewLease implements loop.Leaser.
func (s *Store) RenewLease(ctx context.Context, l loop.Lease) error {
	return s.leaseExec(ctx, l, "renew", `UPDATE leases SET heartbeat = $5 WHERE session = $1 AND run_id = $2 AND instance = $3 AND pid = $4`,
		l.Heartbeat.UTC())
}

// ReleaseLease implements loop.Leaser.
func (s *Store) ReleaseLease(ctx context.Context, l loop.Lease) error {
	return s.leaseExec(ctx, l, "release", `DELETE FROM leases WHERE session = $1 AND run_id = $2 AND instance = $3 AND pid = $4`)
}

func (s *Store) leaseExec(ctx context.Context, l loop.Lease, what, query string, args ...any) error {
	tag, err := s.db.Exec(ctx, query, append([]any{l.SessionID, l.RunID, l.Instance, l.PID}, args...)...)
	if err != nil {
		return fmt.Errorf("%s lease of session %q: %w", what, l.SessionID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%s lease of session %q: %w", what, l.SessionID, loop.ErrLeaseLost)
	}
	return nil
}

// Lease returns a session's current lease, if any (for tests and diagnostics).
func (s *Store) Lease(ctx context.Context, session string) (loop.Lease, bool, error) {
	var l loop.Lease
	err := s.db.QueryRow(ctx, `SELECT session, run_id, pid, host, instance, heartbeat FROM leases WHERE session = $1`, session).
		Scan(&l.SessionID, &l.RunID, &l.PID, &l.Host, &l.Instance, &l.Heartbeat)
	if errors.Is(err, pgx.ErrNoRows) {
		return loop.Lease{}, false, nil
	}
	if err != nil {
		return loop.Lease{}, false, fmt.Errorf("lease of session %q: %w", session, err)
	}
	return l, true, nil
}
