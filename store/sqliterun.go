package store

import (
	"context"
	"fmt"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/seal"
)

const qKVSet = `INSERT INTO kv (plugin, key, value) VALUES (?, ?, ?)
		ON CONFLICT (plugin, key) DO UPDATE SET value = excluded.value`

// AppendRunKV implements loop.KVRunAppender: AppendRun, with kv set in the same
// transaction (a workflow step's record with its call's writes).
func (s *SQLite) AppendRunKV(ctx context.Context, r loop.RunRecord, kv []loop.KVWrite, entries ...loop.Entry) error {
	return s.appendRun(ctx, r, kv, entries)
}

// appendRun is AppendRun and AppendRunKV: the run record, the entries, kv and, with a
// final record, the lease's release, in one transaction.
func (s *SQLite) appendRun(ctx context.Context, r loop.RunRecord, kv []loop.KVWrite, entries []loop.Entry) error {
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
			// Both writes check the run's fence, so the lease goes last.
			if err := s.w.saveRunTx(ctx, tx, r); err != nil {
				return fmt.Errorf("save run %q: %w", r.ID, err)
			}
			if err := s.w.appendTx(ctx, tx, r.SessionID, es); err != nil {
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

var _ loop.KVRunAppender = (*SQLite)(nil)
