package workflow

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/agenthost/agenthost/loop"
)

// A run's lease rides on its record's first and last writes. The run holds its session's
// lease (loop.HoldSession) from before its record is opened until after the record's
// last write; each was a commit of its own. With a store that can (leaseKVStore: the
// SQLite store), a new run's record is written in the lease's transaction, unless a
// record is there already (the run is resumed), and the run's final record in the
// transaction that gives the lease back. Nothing is called between the lease and the
// record, nor between the final record and the release, so no crash can repeat a call:
// the lease and the new record are stored together or not at all, and the final record
// is stored as it was (the release that fails is retried by the loop, on its own). One
// difference: when HoldSession fails after the lease was taken (its read of the session's
// runs fails), the new record stays, a run with no step run, which a resume continues.

// leaseKVStore is a store that takes a lease with a key-value pair's first write and
// gives it back with its last (store.SQLite's AcquireLeaseKV, ReleaseLeaseKV).
type leaseKVStore interface {
	loop.Leaser
	// AcquireLeaseKV is AcquireLease and kv set unless its key is, in one transaction.
	AcquireLeaseKV(ctx context.Context, l loop.Lease, alive func(loop.Lease) bool, kv loop.KVWrite) (held loop.Lease, created bool, err error)
	// ReleaseLeaseKV sets kv, in order, and gives l back in one transaction; kv is set
	// even when the lease is lost (an error wrapping loop.ErrLeaseLost).
	ReleaseLeaseKV(ctx context.Context, l loop.Lease, kv ...loop.KVWrite) error
}

// recordLease is the store a run's lease is held through (loop.HoldSession): its first
// AcquireLease writes first with the lease and its ReleaseLease writes last, when set.
type recordLease struct {
	loop.SessionStore
	ls leaseKVStore

	mu      sync.Mutex
	first   *loop.KVWrite  // the new run's record, written with the lease unless one is there
	created bool           // first was written
	last    []loop.KVWrite // the final record (its rows and head), written with the release
	lastErr error          // writing last failed (the lease's release is retried without it)
	held    *loop.Lease    // the lease, once taken
	dropped bool           // given back with the run's last call's end (finalKV)

	// ride: the lease and first are taken with the run's first call's first write
	// (ridestart.go); pend is the lease HoldSession asked for, not stored yet.
	ride  bool
	pend  *loop.Lease
	alive func(loop.Lease) bool
}

// leaseDropper is a store that gives a lease back in a run write of another session
// (store.SQLite's ReleaseLeaseWrite, carried by AppendRunKV's kv).
type leaseDropper interface {
	ReleaseLeaseWrite(l loop.Lease) loop.KVWrite
}

func (r *recordLease) AcquireLease(ctx context.Context, l loop.Lease, alive func(loop.Lease) bool) (loop.Lease, error) {
	r.mu.Lock()
	if r.ride { // taken with the first write (ridestart.go)
		r.ride, r.pend, r.alive, r.created = false, &l, alive, true
		r.mu.Unlock()
		return l, nil
	}
	first := r.first
	r.first = nil
	r.mu.Unlock()
	if first == nil {
		held, err := r.ls.AcquireLease(ctx, l, alive)
		if err == nil {
			r.mu.Lock()
			r.held = &l
			r.mu.Unlock()
		}
		return held, err
	}
	held, created, err := r.ls.AcquireLeaseKV(ctx, l, alive, *first)
	r.mu.Lock()
	r.created = err == nil && created
	if err == nil {
		r.held = &l
	}
	r.mu.Unlock()
	return held, err
}

// Runs reads nothing: nothing is ever written to a run's own session (RunSession; no
// surface starts a run in a derived session, host.DerivedPrefix), so HoldSession's check
// of its runs (a run id used, a dead run to close) would read an empty session: it cost
// a read transaction a run.
func (r *recordLease) Runs(context.Context, string) ([]loop.RunRecord, error) { return nil, nil }

func (r *recordLease) RenewLease(ctx context.Context, l loop.Lease) error {
	r.mu.Lock()
	dropped, pending := r.dropped, r.pend != nil
	r.mu.Unlock()
	if dropped || pending {
		return nil // given back with the run's final record, or not taken yet: nothing to renew
	}
	return r.ls.RenewLease(ctx, l)
}

func (r *recordLease) ReleaseLease(ctx context.Context, l loop.Lease) error {
	r.mu.Lock()
	last, dropped, pending := r.last, r.dropped, r.pend != nil
	r.last = nil
	r.mu.Unlock()
	if dropped || pending {
		return nil // given back with the run's final record (finalKV), or never taken
	}
	if last == nil {
		return r.ls.ReleaseLease(ctx, l)
	}
	err := r.ls.ReleaseLeaseKV(ctx, l, last...)
	if err != nil && !errors.Is(err, loop.ErrLeaseLost) {
		r.mu.Lock()
		r.lastErr = err // not stored: the loop retries the release alone
		r.mu.Unlock()
	}
	return err
}

// runLease is a run's hold on its session: release gives the lease back once (with the
// final record, when storeLast was given one).
type runLease struct {
	rl      *recordLease // nil: the store cannot ride the record on the lease
	release func()
	once    sync.Once
}

// holdRun takes the run's lease; fresh (not nil) is the head of a new run's record,
// written with the lease on a store that can, unless the run has a record. created says
// it was.
func (e *Engine) holdRun(ctx context.Context, session, owner string, fresh *loop.KVWrite, ride bool, lost func(error)) (*runLease, bool, error) {
	h := &runLease{}
	st := e.Store
	if ls, ok := e.Store.(leaseKVStore); ok {
		h.rl = &recordLease{SessionStore: e.Store, ls: ls, first: fresh, ride: ride && fresh != nil}
		st = h.rl
	}
	release, err := loop.HoldSession(ctx, st, session, owner, lost)
	if err != nil {
		return nil, false, err
	}
	h.release = release
	created := false
	if h.rl != nil {
		h.rl.mu.Lock()
		created = h.rl.created
		h.rl.mu.Unlock()
	}
	return h, created, nil
}

// dropWrite is the write that gives the run's lease back with another session's run
// write, when the store has one and the lease is held.
func (h *runLease) dropWrite() (loop.KVWrite, bool) {
	if h == nil || h.rl == nil {
		return loop.KVWrite{}, false
	}
	d, ok := h.rl.ls.(leaseDropper)
	h.rl.mu.Lock()
	defer h.rl.mu.Unlock()
	if !ok || h.rl.held == nil || h.rl.dropped {
		return loop.KVWrite{}, false
	}
	return d.ReleaseLeaseWrite(*h.rl.held), true
}

// markDropped records that dropWrite's write landed: the lease is given back.
func (h *runLease) markDropped() {
	h.rl.mu.Lock()
	h.rl.dropped = true
	h.rl.mu.Unlock()
}

// done gives the lease back (once).
func (h *runLease) done() { h.once.Do(h.release) }

// storeLast stores the run's final record kv (its rows, then its head) and gives the
// lease back: in one transaction on a store that can; else it reports false and does
// neither.
func (h *runLease) storeLast(kv []loop.KVWrite) (bool, error) {
	if h == nil || h.rl == nil {
		return false, nil
	}
	h.rl.mu.Lock()
	h.rl.last = kv
	h.rl.mu.Unlock()
	h.done()
	h.rl.mu.Lock()
	defer h.rl.mu.Unlock()
	if h.rl.last != nil {
		// The lease was given back before (HoldSession's release ran): store it alone.
		h.rl.last = nil
		return false, nil
	}
	return true, h.rl.lastErr
}

// saveLast stores the run's final record: its head with the lease's release where the
// store can (the rows that changed, if any, just before).
func (s *sched) saveLast(ctx context.Context) error {
	if err := s.flushStart(); err != nil {
		return err
	}
	r := s.snapshot()
	kv, done, err := s.writes(r)
	if err != nil {
		return fmt.Errorf("workflow %s run %s: encode record: %w", r.Workflow, r.RunID, err)
	}
	if n := len(kv); n > 0 && kv[n-1].Namespace == KVNamespace {
		if ok, err := s.lease.storeLast(kv); ok {
			if err != nil {
				return fmt.Errorf("workflow %s run %s: store record: %w", r.Workflow, r.RunID, err)
			}
			done()
			return nil
		}
	}
	if err := setAll(ctx, s.e.Store, kv); err != nil {
		return fmt.Errorf("workflow %s run %s: store record: %w", r.Workflow, r.RunID, err)
	}
	done()
	return nil
}
