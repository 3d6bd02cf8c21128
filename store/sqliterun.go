package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/seal"
)

const qKVSet = `INSERT INTO kv (plugin, key, value) VALUES (?, ?, ?)
		ON CONFLICT (plugin, key) DO UPDATE SET value = excluded.value`

// AppendRunKV implements loop.KVRunAppender: AppendRun, with kv set in the same
// transaction (a workflow step's record with its call's writes).
func (s *SQLite) AppendRunKV(ctx context.Context, r loop.RunRecord, kv []loop.KVWrite, entries ...loop.Entry) error {
	return s.appendRun(ctx, r, kv, entries, nil)
}

// claim is a run's claim of its session, made in its first write's transaction.
type claim struct {
	lease loop.Lease
	alive func(loop.Lease) bool
}

// AppendRunClaim implements loop.ClaimAppender: the run's lease taken (AcquireLease),
// its run id checked unused, and AppendRunKV, in one transaction.
func (s *SQLite) AppendRunClaim(ctx context.Context, l loop.Lease, alive func(loop.Lease) bool, r loop.RunRecord, kv []loop.KVWrite, entries ...loop.Entry) error {
	return s.appendRun(ctx, r, kv, entries, &claim{l, alive})
}

// takeLeaseTx takes c's lease (AcquireLease) in a write whose state read found the
// session's lease to be none (0), c's (1) or another (2): only another is read whole,
// to refuse it while it lives (loop.ErrSessionBusy).
func takeLeaseTx(ctx context.Context, tx *wtx, c *claim, state int64) error {
	l := c.lease
	if state == 2 {
		held, ok, err := leaseTx(ctx, tx, l.SessionID)
		if err != nil {
			return fmt.Errorf("lease session %q: %w", l.SessionID, err)
		}
		if ok && !held.Same(l) && c.alive(held) {
			return fmt.Errorf("session %q is being written by %s: %w", l.SessionID, held, loop.ErrSessionBusy)
		}
	}
	if _, err := tx.ExecContext(ctx, qSetLease, l.SessionID, l.RunID, l.PID, l.Host, l.Instance, formatTime(l.Heartbeat)); err != nil {
		return fmt.Errorf("lease session %q: %w", l.SessionID, err)
	}
	return nil
}

// appendRun is AppendRun and AppendRunKV: the run record, the entries, kv and, with a
// final record, the lease's release, in one transaction.
func (s *SQLite) appendRun(ctx context.Context, r loop.RunRecord, kv []loop.KVWrite, entries []loop.Entry, c *claim) error {
	es, err := encodeEntries(s.keys, r.SessionID, entries)
	sealed := make([][]byte, len(kv))
	for i, w := range kv {
		v := w.Value
		if v == nil {
			v = []byte{}
		}
		sealed[i] = s.keys.Seal(v, seal.KVAAD(w.Namespace, w.Key))
	}
	if err == nil {
		err = s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
			// With a claim, the lease is taken first (saveRunTx's state read): the writes
			// check it (their fence), so its release, at the end, goes last.
			ws, err := s.w.saveRunTx(ctx, tx, r, c)
			if errors.Is(err, loop.ErrRunExists) || errors.Is(err, loop.ErrSessionBusy) {
				return err
			}
			if err != nil {
				return fmt.Errorf("save run %q: %w", r.ID, err)
			}
			if err := s.w.appendRowsTx(ctx, tx, ws, r.SessionID, es); err != nil { // fenced by saveRunTx
				return err
			}
			for i, w := range kv {
				if ok, err := leaseDropTx(ctx, tx, w); ok { // another session's lease (leasekv.go)
					if err != nil {
						return err
					}
					continue
				}
				if ok, err := s.leaseTakeTx(ctx, tx, w, c); ok { // another session's lease, taken (leasekv.go)
					if err != nil {
						return err
					}
					continue
				}
				if _, err := tx.ExecContext(ctx, qKVSet, w.Namespace, w.Key, sealed[i]); err != nil {
					return fmt.Errorf("kv set %s/%s: %w", w.Namespace, w.Key, err)
				}
			}
			if r.Status != "" { // the run's end: its lease goes with it (loop.RunAppender)
				if _, err := tx.ExecContext(ctx, qDropLease, r.SessionID, r.ID); err != nil {
					return fmt.Errorf("release lease of session %q: %w", r.SessionID, err)
				}
			}
			return nil
		})
	}
	if err != nil {
		return appendError(r.SessionID, err)
	}
	return nil
}

var _ loop.ClaimAppender = (*SQLite)(nil)
