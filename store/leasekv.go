package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/seal"
)

// A lease taken with a key-value pair's first write and given back with its last: a
// workflow run holds its run session's lease while it lives and keeps its record in the
// key-value table (workflow/lease.go). Taking the lease, writing the new run's record,
// writing its final record and giving the lease back were four commits a run; with
// these they are two, and what is durable at each point is what it was: the lease and
// the new record land together, or neither does (a second starter of the run writes
// nothing), and the final record is stored whether or not the lease is still ours (as
// the write on its own was), the lease given back in the same transaction.

const (
	qKVCreate  = `INSERT INTO kv (plugin, key, value) VALUES (?, ?, ?) ON CONFLICT (plugin, key) DO NOTHING`
	qDropOwned = `DELETE FROM leases WHERE session = ? AND run_id = ? AND instance = ? AND pid = ?`
)

// AcquireLeaseKV is AcquireLease(l, alive) and, in the same transaction, kv set unless
// its key is set already; created says whether it was. A session another live process
// holds is refused (loop.ErrSessionBusy, with the held lease) and nothing is written.
func (s *SQLite) AcquireLeaseKV(ctx context.Context, l loop.Lease, alive func(loop.Lease) bool, kv loop.KVWrite) (held loop.Lease, created bool, err error) {
	v := s.sealKV(kv)
	err = s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		var err error
		if held, err = acquireTx(ctx, tx, l, alive); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, qKVCreate, kv.Namespace, kv.Key, v)
		if err != nil {
			return fmt.Errorf("kv set %s/%s: %w", kv.Namespace, kv.Key, err)
		}
		n, err := res.RowsAffected()
		created = n == 1
		return err
	})
	if errors.Is(err, loop.ErrSessionBusy) {
		return held, false, err
	}
	if err != nil {
		return loop.Lease{}, false, fmt.Errorf("lease session %q: %w", l.SessionID, err)
	}
	return held, created, nil
}

// ReleaseLeaseKV sets kv, in order, and gives l back, in one transaction. kv is stored
// even when the session no longer holds l; the error then wraps loop.ErrLeaseLost.
func (s *SQLite) ReleaseLeaseKV(ctx context.Context, l loop.Lease, kv ...loop.KVWrite) error {
	var dropped int64
	err := s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		if err := s.kvSetTx(ctx, tx, kv); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, qDropOwned, l.SessionID, l.RunID, l.Instance, l.PID)
		if err != nil {
			return err
		}
		dropped, err = res.RowsAffected()
		return err
	})
	if err == nil && dropped == 0 {
		err = loop.ErrLeaseLost
	}
	if err != nil {
		return fmt.Errorf("release lease of session %q: %w", l.SessionID, err)
	}
	return nil
}

// A lease given back in another session's write. A workflow run's final record rides on
// its last step's call's end (workflow/lease.go): the call's write (AppendRunKV) carries
// the run's head and, with ReleaseLeaseWrite, the run session's lease, given back in
// the same transaction. What is durable is what ReleaseLeaseKV makes durable, with the
// call's end: the record and the release land together, or neither does.

// leaseDropNamespace marks a write among a run's key-value writes (AppendRunKV,
// AppendRunClaim) that is no key-value pair: it gives back the lease its value names.
// Only those writes read it (leaseDropTx); KVSet stores any namespace as it is.
const leaseDropNamespace = "agenthost/lease-release"

// ReleaseLeaseWrite is the write that gives l back in the transaction of the run write
// (AppendRunKV) that carries it. A lease the session no longer holds is left as it is
// and the write lands (as ReleaseLeaseKV stores its value when the lease was lost).
func (s *SQLite) ReleaseLeaseWrite(l loop.Lease) loop.KVWrite {
	b, _ := json.Marshal(l) // a Lease always encodes
	return loop.KVWrite{Namespace: leaseDropNamespace, Key: l.SessionID, Value: b}
}

// leaseDropTx gives back the lease w names when w is a ReleaseLeaseWrite (ok true);
// any other write is not its (ok false).
func leaseDropTx(ctx context.Context, tx *wtx, w loop.KVWrite) (ok bool, err error) {
	if w.Namespace != leaseDropNamespace {
		return false, nil
	}
	var l loop.Lease
	if err := json.Unmarshal(w.Value, &l); err != nil || l.SessionID != w.Key {
		return true, fmt.Errorf("release lease of session %q: not a lease release (%v)", w.Key, err)
	}
	if _, err := tx.ExecContext(ctx, qDropOwned, l.SessionID, l.RunID, l.Instance, l.PID); err != nil {
		return true, fmt.Errorf("release lease of session %q: %w", l.SessionID, err)
	}
	return true, nil
}

// sealKV is kv's value as the table keeps it (sealed when the store has keys).
func (s *SQLite) sealKV(kv loop.KVWrite) []byte {
	v := kv.Value
	if v == nil {
		v = []byte{}
	}
	return s.keys.Seal(v, seal.KVAAD(kv.Namespace, kv.Key))
}

// A lease taken in another session's claim. A new workflow run's lease and record ride
// on its first call's first write (workflow/lease.go): that write takes the call's own
// session's lease (AppendRunClaim) and, with TakeLeaseWrite, the run session's lease and
// the run's new record, in the same transaction. What is durable is what AcquireLeaseKV
// makes durable, with the call's first write: all of it lands or none does. The lease is
// refused by the claim's rule (its alive): a live holder fails the whole write with
// loop.ErrSessionBusy, and so does a record already there (another starter created the
// run meanwhile), so the call is not made.

// leaseTakeNamespace marks a write among a claim's key-value writes (AppendRunClaim)
// that is no key-value pair: it takes the lease its value names and creates its record.
const leaseTakeNamespace = "agenthost/lease-take"

// leaseTake is a TakeLeaseWrite's value.
type leaseTake struct {
	Lease loop.Lease   `json:"lease"`
	KV    loop.KVWrite `json:"kv"`
}

// TakeLeaseWrite is the write that takes l and creates kv (refused when its key is set)
// in the transaction of the run claim (AppendRunClaim) that carries it; a write without
// a claim refuses it.
func (s *SQLite) TakeLeaseWrite(l loop.Lease, kv loop.KVWrite) loop.KVWrite {
	b, _ := json.Marshal(leaseTake{Lease: l, KV: kv}) // a lease and bytes always encode
	return loop.KVWrite{Namespace: leaseTakeNamespace, Key: l.SessionID, Value: b}
}

// leaseTakeTx takes the lease w names and creates its record when w is a
// TakeLeaseWrite (ok true), by c's rule; any other write is not its (ok false).
func (s *SQLite) leaseTakeTx(ctx context.Context, tx *wtx, w loop.KVWrite, c *claim) (ok bool, err error) {
	if w.Namespace != leaseTakeNamespace {
		return false, nil
	}
	var t leaseTake
	if err := json.Unmarshal(w.Value, &t); err != nil || t.Lease.SessionID != w.Key {
		return true, fmt.Errorf("lease session %q: not a lease take (%v)", w.Key, err)
	}
	if c == nil {
		return true, fmt.Errorf("lease session %q: a lease is taken only with a run's claim", w.Key)
	}
	if held, err := acquireTx(ctx, tx, t.Lease, c.alive); err != nil {
		if errors.Is(err, loop.ErrSessionBusy) {
			return true, fmt.Errorf("session %q is being written by %s: %w", w.Key, held, err)
		}
		return true, fmt.Errorf("lease session %q: %w", w.Key, err)
	}
	res, err := tx.ExecContext(ctx, qKVCreate, t.KV.Namespace, t.KV.Key, s.sealKV(t.KV))
	if err != nil {
		return true, fmt.Errorf("kv set %s/%s: %w", t.KV.Namespace, t.KV.Key, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return true, fmt.Errorf("session %q: %s %q was created by another process: %w", w.Key, t.KV.Namespace, t.KV.Key, errors.Join(err, loop.ErrSessionBusy))
	}
	return true, nil
}

// KVHas says whether plugin has a value under key: a point read (pointreads.go), as a
// run's start makes, not a read of the mapped pool, which maps the file again after each
// commit. A new workflow run reads it to know whether its start may ride on its first
// call (workflow/ridestart.go).
func (s *SQLite) KVHas(ctx context.Context, plugin, key string) (bool, error) {
	if err := s.watch.check(); err != nil {
		return false, fmt.Errorf("kv get %s/%s: %w", plugin, key, err)
	}
	rows, err := s.point.query(ctx, `SELECT 1 FROM kv WHERE plugin = ? AND key = ?`, plugin, key)
	if err != nil {
		return false, fmt.Errorf("kv get %s/%s: %w", plugin, key, err)
	}
	has := rows.Next()
	err = errors.Join(rows.Err(), rows.Close())
	if err != nil {
		return false, fmt.Errorf("kv get %s/%s: %w", plugin, key, err)
	}
	return has, nil
}

// KVSetAll sets kv, in order, in one transaction (a workflow run's rows and head).
func (s *SQLite) KVSetAll(ctx context.Context, kv []loop.KVWrite) error {
	return s.w.write(ctx, func(ctx context.Context, tx *wtx) error { return s.kvSetTx(ctx, tx, kv) })
}

// kvSetTx sets kv, sealed, in tx.
func (s *SQLite) kvSetTx(ctx context.Context, tx *wtx, kv []loop.KVWrite) error {
	for _, w := range kv {
		if _, err := tx.ExecContext(ctx, qKVSet, w.Namespace, w.Key, s.sealKV(w)); err != nil {
			return fmt.Errorf("kv set %s/%s: %w", w.Namespace, w.Key, err)
		}
	}
	return nil
}
