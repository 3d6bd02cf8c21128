package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/loop"
)

// Leases: one row per session whose run is live, naming the owning process (see
// loop.Leaser). The row is read and replaced in one BEGIN IMMEDIATE transaction, so two
// processes taking one session are ordered by SQLite's write lock.

// AcquireLease implements loop.Leaser.
func (s *SQLite) AcquireLease(ctx context.Context, l loop.Lease, alive func(loop.Lease) bool) (loop.Lease, error) {
	var held loop.Lease
	err := s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		var err error
		held, err = acquireTx(ctx, tx, l, alive)
		return err
	})
	if errors.Is(err, loop.ErrSessionBusy) {
		return held, err
	}
	if err != nil {
		return loop.Lease{}, fmt.Errorf("lease session %q: %w", l.SessionID, err)
	}
	return held, nil
}

// acquireTx is AcquireLease in tx: the session's lease read and, unless another live
// one is held (loop.ErrSessionBusy), replaced by l. It returns the lease it read.
func acquireTx(ctx context.Context, tx *wtx, l loop.Lease, alive func(loop.Lease) bool) (loop.Lease, error) {
	held, ok, err := leaseTx(ctx, tx, l.SessionID)
	if err != nil {
		return held, err
	}
	if ok && !held.Same(l) && alive(held) {
		return held, loop.ErrSessionBusy
	}
	_, err = tx.ExecContext(ctx, qSetLease, l.SessionID, l.RunID, l.PID, l.Host, l.Instance, formatTime(l.Heartbeat))
	return held, err
}

// leaseTx reads session's lease in tx (ok: it has one).
func leaseTx(ctx context.Context, tx *wtx, session string) (held loop.Lease, ok bool, err error) {
	var hb string
	err = tx.QueryRowContext(ctx, qLeaseOf, session).
		Scan(&held.SessionID, &held.RunID, &held.PID, &held.Host, &held.Instance, &hb)
	if errors.Is(err, sql.ErrNoRows) {
		return loop.Lease{}, false, nil
	}
	if err != nil {
		return held, false, err
	}
	held.Heartbeat = parseTime(hb)
	return held, true, nil
}

const qSetLease = `INSERT INTO leases (session, run_id, pid, host, instance, heartbeat) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (session) DO UPDATE SET run_id = excluded.run_id, pid = excluded.pid, host = excluded.host,
		instance = excluded.instance, heartbeat = excluded.heartbeat`

// RenewLease implements loop.Leaser.
func (s *SQLite) RenewLease(ctx context.Context, l loop.Lease) error {
	return s.leaseExec(ctx, l, "renew", `UPDATE leases SET heartbeat = ? WHERE session = ? AND run_id = ? AND instance = ? AND pid = ?`,
		formatTime(l.Heartbeat))
}

// ReleaseLease implements loop.Leaser.
func (s *SQLite) ReleaseLease(ctx context.Context, l loop.Lease) error {
	return s.leaseExec(ctx, l, "release", `DELETE FROM leases WHERE session = ? AND run_id = ? AND instance = ? AND pid = ?`)
}

func (s *SQLite) leaseExec(ctx context.Context, l loop.Lease, what, query string, args ...any) error {
	err := s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		res, err := tx.ExecContext(ctx, query, append(args, l.SessionID, l.RunID, l.Instance, l.PID)...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return loop.ErrLeaseLost
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s lease of session %q: %w", what, l.SessionID, err)
	}
	return nil
}

// Lease returns a session's current lease, if any (for tests and diagnostics).
func (s *SQLite) Lease(ctx context.Context, session string) (loop.Lease, bool, error) {
	var l loop.Lease
	var hb string
	err := s.queryRow(ctx, `SELECT session, run_id, pid, host, instance, heartbeat FROM leases WHERE session = ?`, session).
		Scan(&l.SessionID, &l.RunID, &l.PID, &l.Host, &l.Instance, &hb)
	if errors.Is(err, sql.ErrNoRows) {
		return loop.Lease{}, false, nil
	}
	if err != nil {
		return loop.Lease{}, false, fmt.Errorf("lease of session %q: %w", session, err)
	}
	l.Heartbeat = parseTime(hb)
	return l, true, nil
}
