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

// claimTx takes c's lease (the run id is checked unused by saveRunTx's read).
func claimTx(ctx context.Context, tx *wtx, c *claim) error {
	held, err := acquireTx(ctx, tx, c.lease, c.alive)
	if errors.Is(err, loop.ErrSessionBusy) {
		return fmt.Errorf("session %q is being written by %s: %w", c.lease.SessionID, held, err)
	}
	if err != nil {
		return fmt.Errorf("lease session %q: %w", c.lease.SessionID, err)
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
			if c != nil { // the lease first: the writes below check it (their fence)
				if err := claimTx(ctx, tx, c); err != nil {
					return err
				}
			}
			// Both writes check the run's fence, so the lease goes last.
			ws, err := s.w.saveRunTx(ctx, tx, r, c != nil)
			if errors.Is(err, loop.ErrRunExists) {
				return err
			}
			if err != nil {
				return fmt.Errorf("save run %q: %w", r.ID, err)
			}
			if err := s.w.appendRowsTx(ctx, tx, ws, r.SessionID, es); err != nil { // fenced by saveRunTx
				return err
			}
			for i, w := range kv {
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
