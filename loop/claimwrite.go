package loop

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A run's claim of its session, made with its first write. Taking the lease on its own
// is one commit, and the run's first write (its record and entries, before its first
// outside call, rule L21) follows it with nothing in between that a crash could repeat:
// no model call, no tool call. So with a store that is a ClaimAppender, a run reads the
// session's lease when it starts (a read, no commit) and refuses a session a live
// process holds, as before; the lease itself is taken in the transaction of the run's
// first write, which refuses the write when another live process took it meanwhile
// (ErrSessionBusy) or when the run id was used on the session meanwhile (ErrRunExists).
// A run that meets either fails there, having written nothing and called nothing; the
// race is between two starts on one session, where one was refused at start before.
// What is durable before each outside call is what was: the lease and the first write
// land together, before the first call, or neither does. A session with a run a dead
// process left open is claimed as before (lease, then closing that run), so that its
// close is fenced by the new lease.

// ClaimAppender is an optional extension of a store that is a Leaser and a
// KVRunAppender.
type ClaimAppender interface {
	Leaser
	// LeaseOf returns the session's lease, if it holds one (a read).
	LeaseOf(ctx context.Context, session string) (Lease, bool, error)
	// AppendRunClaim is AcquireLease(l, alive) followed by AppendRunKV(run, kv,
	// entries...), in one transaction; it refuses (ErrRunExists) a run id the session
	// already used.
	AppendRunClaim(ctx context.Context, l Lease, alive func(Lease) bool, run RunRecord, kv []KVWrite, entries ...Entry) error
}

// deferClaim is claimSession's start for a ClaimAppender: the lease read, not taken. ok
// is false when the session needs the claim made at once (a run a dead process left
// open there must be closed under the new lease).
func deferClaim(ctx context.Context, st SessionStore, ca ClaimAppender, session, runID string, lost func(error)) (h *heldSession, ok bool, err error) {
	held, has, err := ca.LeaseOf(ctx, session)
	if err != nil {
		return nil, false, fmt.Errorf("loop: session %q: read lease: %w", session, err)
	}
	if has && !(held.SessionID == session && held.RunID == runID && held.Instance == instanceID && held.PID == pid) && leaseAlive(held, time.Now()) {
		return nil, false, fmt.Errorf("loop: session %q is being written by %s: %w", session, held, ErrSessionBusy)
	}
	runs, err := st.Runs(ctx, session)
	if err != nil {
		return nil, false, fmt.Errorf("loop: runs of session %q: %w", session, err)
	}
	for _, r := range runs {
		if r.ID == runID {
			return nil, false, fmt.Errorf("loop: run %q on session %q: %w", runID, session, ErrRunExists)
		}
		if r.Status == "" {
			return nil, false, nil
		}
	}
	l := newLease(session, runID)
	holdOwn(l) // as acquireLease does: a lease of ours is alive while we hold it
	return &heldSession{st: st, lease: &l, lost: lost, pending: true}, true, nil
}

// claimWith writes the run's first write with its claim (ClaimAppender.AppendRunClaim);
// once it is stored the lease is the run's and is renewed.
func (h *heldSession) claimWith(ctx context.Context, run RunRecord, kv []KVWrite, entries []Entry) error {
	h.mu.Lock()
	l := *h.lease
	h.mu.Unlock()
	err := h.st.(ClaimAppender).AppendRunClaim(ctx, l, func(held Lease) bool { return leaseAlive(held, time.Now()) }, run, kv, entries...)
	if err != nil {
		if errors.Is(err, ErrSessionBusy) {
			return fmt.Errorf("session %q was taken by another process as this run started: %w", l.SessionID, err)
		}
		return err
	}
	h.mu.Lock()
	h.pending = false
	if !h.stopped && run.Status == "" {
		h.timer = time.AfterFunc(renewEvery, h.renew)
	}
	h.mu.Unlock()
	return nil
}
