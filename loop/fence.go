package loop

import (
	"context"
	"fmt"
)

// Fencing. A lease alone cannot stop a writer that does not know it lost it: a process
// paused past LeaseTTL (SIGSTOP, a long GC, a frozen VM) wakes up with its run still in
// memory, and before its next renewal tells it the lease is gone, it writes. Its appends
// used to be refused only when their seq collided; its run record was not refused at all,
// so a zombie overwrote the record the recovering process wrote (the log said aborted,
// `runs` said failed). So every write of a run carries the lease it was made under (its
// fence) and the store refuses, in the transaction of the write, a write whose fence is
// not the session's current lease, with ErrLeaseLost.
//
// The lease's owner identity (session, run id, instance, pid; Lease.Same) is the fencing
// token, in place of a generation counter: the instance is random per process and a run
// id is used once per session (ErrRunExists), so no later holder of a session ever has
// the identity of an earlier one, and a lease taken over or released never comes back.
// A counter would order holders; fencing only needs "is it still you", and the identity
// answers it with the columns the lease tables already have.
//
// The fence rides on the write's context, so SessionStore and RunAppender keep their
// signatures (every store, wrapper and test double still works) and a store checks it
// when it can: a write of a run carries the run's journal on its context (notify.go), and
// a recovery pass marks its context with WithFence.

type fenceKey struct{}

// WithFence returns a context whose writes to l.SessionID are fenced by l: a Leaser
// store refuses them unless l is still the session's lease.
func WithFence(ctx context.Context, l Lease) context.Context {
	return context.WithValue(ctx, fenceKey{}, l)
}

// FenceOf returns the lease a write to session made with ctx must still hold, if it
// carries one: the lease of the run whose context it is (when the run's store keeps
// leases, the run took one when it started), else one given with WithFence. A fence of
// another session does not apply (a nested run writes its own session under the context
// of its caller's tool call).
func FenceOf(ctx context.Context, session string) (Lease, bool) {
	if j, ok := ctx.Value(noticeKey{}).(*journal); ok && j.session == session {
		if _, leases := j.sessions.(Leaser); leases {
			return newLease(j.session, j.runID), true
		}
	}
	if l, ok := ctx.Value(fenceKey{}).(Lease); ok && l.SessionID == session {
		return l, true
	}
	return Lease{}, false
}

// FenceError is what a store returns for a write whose fence is not the session's lease
// (held; ok false when the session holds none): it wraps ErrLeaseLost.
func FenceError(fence, held Lease, ok bool) error {
	now := "none"
	if ok {
		now = held.String()
	}
	return fmt.Errorf("write of run %q to session %q refused: its lease was taken over (the session's lease now: %s): %w",
		fence.RunID, fence.SessionID, now, ErrLeaseLost)
}
