package loop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// ErrRunExists is returned when a run id is already used on its session: run ids are
// unique per session, and a record of a finished run is never overwritten.
var ErrRunExists = errors.New("run id already used on this session")

// ErrLeaseLost is returned by Leaser.RenewLease and ReleaseLease when the lease no longer
// belongs to its owner (another process judged it dead and took the session).
var ErrLeaseLost = errors.New("session lease lost")

// Lease heartbeats. A lease whose heartbeat is older than LeaseTTL is dead even when its
// pid is alive (the process may be stuck, or the pid reused); a live run renews its
// lease every LeaseRenew. They change only through SetLeaseTTL.
var (
	LeaseTTL   = 30 * time.Second
	LeaseRenew = LeaseTTL / 3
)

// SetLeaseTTL sets LeaseTTL to d and LeaseRenew to d/3. It is for tests of processes
// (agenthost reads AGENTHOST_LEASE_TTL): a test that stops a process past its lease
// should not wait 30 seconds. Call it before any run starts; every process sharing a
// store should use the same value.
func SetLeaseTTL(d time.Duration) {
	LeaseTTL, LeaseRenew, renewEvery = d, d/3, d/3
}

// Lease says which process owns a session while one of its runs is live. Owner identity
// is (Instance, RunID): Instance is random per process, so a reused pid is not mistaken
// for the owner.
type Lease struct {
	SessionID string    `json:"session_id"`
	RunID     string    `json:"run_id"` // "" for a recovery pass
	PID       int       `json:"pid"`
	Host      string    `json:"host"`
	Instance  string    `json:"instance"`
	Heartbeat time.Time `json:"heartbeat"`
}

// Same reports whether l and o name the same owner.
func (l Lease) Same(o Lease) bool {
	return l.SessionID == o.SessionID && l.RunID == o.RunID && l.Instance == o.Instance && l.PID == o.PID
}

// Alive reports whether the lease's owner may still be writing at now: its heartbeat
// is younger than LeaseTTL and, when it was taken on this host, its pid is alive.
func (l Lease) Alive(now time.Time) bool {
	if now.Sub(l.Heartbeat) > LeaseTTL {
		return false
	}
	if l.Host == hostName && !pidAlive(l.PID) {
		return false
	}
	return true
}

func (l Lease) String() string {
	return fmt.Sprintf("pid %d on %s (run %q, heartbeat %s)", l.PID, l.Host, l.RunID, l.Heartbeat.UTC().Format(time.RFC3339))
}

// Leaser is an optional SessionStore extension (checked with a type assertion, as
// database/sql does with its driver interfaces) that records which process owns a
// session. A store shared between processes should implement it: without it, only runs
// of one Agent exclude each other.
type Leaser interface {
	// AcquireLease stores l as its session's lease. If the session holds another lease
	// and alive(held) is true, it stores nothing and returns the held lease and an error
	// wrapping ErrSessionBusy. Reading and replacing must be one atomic step across
	// processes. It returns the lease it replaced (zero if none).
	AcquireLease(ctx context.Context, l Lease, alive func(Lease) bool) (Lease, error)
	// RenewLease sets the heartbeat of l (matched with Lease.Same) to l.Heartbeat; it
	// returns ErrLeaseLost when the session no longer holds l.
	RenewLease(ctx context.Context, l Lease) error
	// ReleaseLease removes l if the session still holds it.
	ReleaseLease(ctx context.Context, l Lease) error
}

var (
	renewEvery  = LeaseRenew // tests shorten it
	hostName, _ = os.Hostname()
	instanceID  = newInstanceID()
	pid         = os.Getpid()
)

func newInstanceID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newLease is this process's lease on a session for a run.
func newLease(session, runID string) Lease {
	return Lease{SessionID: session, RunID: runID, PID: pid, Host: hostName, Instance: instanceID, Heartbeat: time.Now().UTC()}
}

// acquireLease takes the session's lease when st is a Leaser. It is a no-op (a nil
// release) for stores without leases.
func acquireLease(ctx context.Context, st SessionStore, session, runID string) (*Lease, error) {
	ls, ok := st.(Leaser)
	if !ok {
		return nil, nil
	}
	l := newLease(session, runID)
	holdOwn(l) // before it is stored: see ownlease.go
	held, err := ls.AcquireLease(ctx, l, func(h Lease) bool { return leaseAlive(h, time.Now()) })
	if err != nil {
		dropOwn(l)
		if errors.Is(err, ErrSessionBusy) {
			return nil, fmt.Errorf("session %q is being written by %s: %w", session, held, ErrSessionBusy)
		}
		return nil, fmt.Errorf("session %q: take lease: %w", session, err)
	}
	return &l, nil
}

// heldSession is what a started run holds in the store: its lease, renewed by a timer
// (no goroutine per run: a run that lives less than LeaseRenew never renews).
type heldSession struct {
	st    SessionStore
	lease *Lease
	lost  func(error)

	mu      sync.Mutex // held across a renewal, so release never races one
	timer   *time.Timer
	stopped bool
	pending bool         // the lease is taken with the run's first write (claimwrite.go)
	head    *SessionHead // read with the claim state, for the run's start (ClaimState.Head)
}

// claimSession is called when a run starts, after the Agent's own busy check. It takes
// the session's lease (refusing a session another live process writes), closes the runs
// a dead process left open on the session (they are dead: we now own it), and refuses a
// run id the session already used. While the run lives the lease is renewed; if it is
// lost, lost is called (the run is cancelled).
func claimSession(ctx context.Context, st SessionStore, session, runID string, lost func(error)) (*heldSession, error) {
	return claimSessionAs(ctx, st, session, runID, lost, false)
}

// claimSessionAs is claimSession; withFirstWrite defers taking the lease to the run's
// first write when the store can (claimwrite.go).
func claimSessionAs(ctx context.Context, st SessionStore, session, runID string, lost func(error), withFirstWrite bool) (*heldSession, error) {
	if ca, ok := st.(ClaimAppender); ok && withFirstWrite {
		if h, ok, err := deferClaim(ctx, st, ca, session, runID, lost); ok || err != nil {
			return h, err
		}
	}
	lease, err := acquireLease(ctx, st, session, runID)
	if err != nil {
		return nil, fmt.Errorf("loop: %w", err)
	}
	var h *heldSession // nil for a store without leases: nothing to hold (release is a no-op)
	if lease != nil {
		h = &heldSession{st: st, lease: lease, lost: lost}
	}
	fail := func(err error) (*heldSession, error) {
		h.release()
		return nil, fmt.Errorf("loop: %w", err)
	}
	runs, err := st.Runs(ctx, session)
	if err != nil {
		return fail(fmt.Errorf("runs of session %q: %w", session, err))
	}
	for _, r := range runs {
		if r.ID == runID {
			return fail(fmt.Errorf("run %q on session %q: %w", runID, session, ErrRunExists))
		}
	}
	if lease == nil {
		return nil, nil // the store keeps no leases: nothing to hold or release
	}
	fenced := WithFence(ctx, *lease) // closing them is a write of ours (fence.go)
	for _, r := range runs {
		if r.Status == "" {
			if err := closeDeadRun(fenced, st, r); err != nil {
				return fail(err)
			}
		}
	}
	h.mu.Lock()
	h.timer = time.AfterFunc(renewEvery, h.renew)
	h.mu.Unlock()
	return h, nil
}

func (h *heldSession) renew() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped || h.pending {
		return
	}
	l := *h.lease
	l.Heartbeat = time.Now().UTC()
	err := h.st.(Leaser).RenewLease(context.Background(), l)
	if errors.Is(err, ErrLeaseLost) {
		h.lost(fmt.Errorf("session %q: %w", l.SessionID, err))
		return
	}
	// On another error the next tick tries again, well within LeaseTTL.
	h.timer.Reset(renewEvery)
}

// release stops renewing and gives the lease back. It is safe on nil.
func (h *heldSession) release() {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.stopped = true
	if h.timer != nil {
		h.timer.Stop()
	}
	lease := h.lease
	h.mu.Unlock()
	if lease != nil {
		dropOwn(*lease) // no longer held here, even if giving it back has to wait
		if !h.pending { // a lease still to be taken with the first write was never stored
			releaseLease(h.st.(Leaser), *lease, time.Now())
		}
	}
}

// releaseEvery is how often a release that failed is tried again.
var releaseEvery = time.Second

// releaseLease gives a lease back. When the store cannot be reached (an outage, a
// restarting database) it tries again in the background until it succeeds, the lease is
// lost or LeaseTTL has passed since last (the lease is dead by then anyway). Without
// that, a run that ended during an outage keeps its session for the rest of LeaseTTL,
// and the retry of its job (surface/cluster) waits that long to continue it.
func releaseLease(ls Leaser, l Lease, last time.Time) {
	err := ls.ReleaseLease(context.Background(), l)
	if err == nil || errors.Is(err, ErrLeaseLost) || time.Since(last) > LeaseTTL {
		return
	}
	time.AfterFunc(releaseEvery, func() { releaseLease(ls, l, last) })
}

// claim is Agent.start's store side (see claimSession). On error it undoes the
// registration start made.
func (a *Agent) claim(ctx context.Context, in RunInput, cancel context.CancelCauseFunc) (*heldSession, error) {
	h, err := claimSessionAs(ctx, a.cfg.Store, in.SessionID, in.RunID, cancel, true)
	if err != nil {
		cancel(err)
		a.mu.Lock()
		delete(a.runs, runKey{in.SessionID, in.RunID})
		delete(a.sessions, in.SessionID)
		a.mu.Unlock()
		return nil, err
	}
	if h != nil {
		a.held.Store(runKey{in.SessionID, in.RunID}, h)
	}
	return h, nil
}

// leaseReleased records that the store released the run's lease with its final record
// (RunAppender): unclaim then only stops renewing it.
func (a *Agent) leaseReleased(k runKey) {
	if h, ok := a.held.Load(k); ok {
		h := h.(*heldSession)
		h.mu.Lock()
		h.stopped = true
		if h.timer != nil {
			h.timer.Stop()
		}
		if h.lease != nil {
			dropOwn(*h.lease)
		}
		h.lease = nil
		h.mu.Unlock()
	}
}

// unclaim releases the session's lease when a run ends.
func (a *Agent) unclaim(k runKey) {
	if h, ok := a.held.LoadAndDelete(k); ok {
		h.(*heldSession).release()
	}
}

// HoldSession takes session's lease for work that is not a run of an Agent but must
// have one writer across processes (a workflow run, workflow), and renews it until
// release is called; lost is called if another process takes it over. A session that
// a live process holds is refused with an error wrapping ErrSessionBusy; one a dead
// process held is taken. With a store that keeps no leases it holds nothing.
func HoldSession(ctx context.Context, st SessionStore, session, owner string, lost func(error)) (release func(), err error) {
	h, err := claimSession(ctx, st, session, owner, lost)
	if err != nil {
		return nil, err
	}
	return h.release, nil
}
