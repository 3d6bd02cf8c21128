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
	// ClaimState reads what a run's start checks on its session (reads, no write).
	ClaimState(ctx context.Context, session, runID string) (ClaimState, error)
	// AppendRunClaim is AcquireLease(l, alive) followed by AppendRunKV(run, kv,
	// entries...), in one transaction; it refuses (ErrRunExists) a run id the session
	// already used.
	AppendRunClaim(ctx context.Context, l Lease, alive func(Lease) bool, run RunRecord, kv []KVWrite, entries ...Entry) error
}

// ClaimState is what a run's start reads of its session: its lease (Held: it has one),
// whether runID was used on it, and whether a run on it has no end (OpenRuns: one a
// dead process left, or a live one's).
type ClaimState struct {
	Lease    Lease
	Held     bool
	RunUsed  bool
	OpenRuns bool
	// Head, when the store set it, is the session's head (what LoadHead returns) read in
	// the same snapshot as the rest: the run starts from it instead of reading it again
	// (one read at a run's start, not two). It is used only when the claim is deferred
	// to the first write: a session with open runs has them closed first, which appends.
	// A write landing between this read and the run's first write fails that write (its
	// seq no longer follows the session's last), as one after a separate LoadHead does.
	Head *SessionHead
}

// deferClaim is claimSession's start for a ClaimAppender: the lease read, not taken. ok
// is false when the session needs the claim made at once (a run a dead process left
// open there must be closed under the new lease).
func deferClaim(ctx context.Context, st SessionStore, ca ClaimAppender, session, runID string, lost func(error)) (h *heldSession, ok bool, err error) {
	cs, err := ca.ClaimState(ctx, session, runID)
	if err != nil {
		return nil, false, fmt.Errorf("loop: session %q: %w", session, err)
	}
	l := newLease(session, runID)
	if cs.Held && !cs.Lease.Same(l) && leaseAlive(cs.Lease, time.Now()) {
		return nil, false, fmt.Errorf("loop: session %q is being written by %s: %w", session, cs.Lease, ErrSessionBusy)
	}
	if cs.RunUsed {
		return nil, false, fmt.Errorf("loop: run %q on session %q: %w", runID, session, ErrRunExists)
	}
	if cs.OpenRuns {
		return nil, false, nil // closed under the lease, taken at once (claimSession)
	}
	holdOwn(l) // as acquireLease does: a lease of ours is alive while we hold it
	return &heldSession{st: st, lease: &l, lost: lost, pending: true, head: cs.Head}, true, nil
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
