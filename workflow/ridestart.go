package workflow

import (
	"context"
	"fmt"
	"sync"

	"github.com/agenthost/agenthost/loop"
)

// A new run's start rides on its first call's first write. A run's lease and its new
// record were a commit of the run's own (AcquireLeaseKV, lease.go), followed by its first
// step's call, whose first write (before the tool runs, rule L21) is a commit of its own
// that takes the step session's lease (loop.ClaimAppender). Nothing is called between
// the two, so on a store that can take a lease in another session's claim (leaseTaker:
// SQLite), a new run whose one first step is a tool step takes its lease and creates its
// record in that write's transaction (store.SQLite's TakeLeaseWrite): an 8-step chain is
// 16 commits, its calls' own, where it was 17. What is durable before the tool runs is
// what was: the run's lease, its record and the call's first write land together, or
// none does and nothing is called. A starter that meets a live holder of the run's lease,
// or a record another starter created meanwhile, fails that write (loop.ErrSessionBusy):
// its call is not made, the run ends with that error and stores nothing.
//
// Any other write of the run before that one (a step settled, a step that waits for its
// session, the run's end) takes the lease and stores the record first, on their own
// (flush), as before. So does a first write that is no claim (the step's session had a
// run a dead process left open, closed under its lease first): if that fails, the write
// carries the take anyway, which the store refuses without a claim, so the call is not
// made. The run's record is read first (a read, no commit): a run that has one is a
// resume and takes its lease as before.
//
// Until the start is stored, the run's events (workflow_started, its first step's
// step_started) are held (heldEvents), and given out once it is: a starter refused in
// the race emits nothing and returns the error, so a surface answers it as it answers
// a start refused up front (HTTP 409), not with a stream that starts and then fails.
// Nothing outside the run happens before the start is stored, so nothing is held back
// that a client could have seen happen.

// leaseTaker is a store that takes a lease in another session's claim, and says
// whether a key has a value with a point read (the run's record: a resume's start does
// not ride).
type leaseTaker interface {
	TakeLeaseWrite(l loop.Lease, kv loop.KVWrite) loop.KVWrite
	KVHas(ctx context.Context, plugin, key string) (bool, error)
}

// RunWriteRider is an Executor whose tool steps are calls through the one tool pipeline
// (loop.Agent.DirectCall) on the step's context: their first write is made before the
// tool runs and carries what the context's RunWriter gives it (loop.WithRunWrites). A
// new run's start rides on such a call's first write; with another Executor it is
// stored before its first step.
type RunWriteRider interface {
	RidesRunWrites()
}

// RidesRunWrites implements RunWriteRider.
func (AgentExecutor) RidesRunWrites() {}

// rides says whether a new run of w rides its start on its first call (e: its store and
// Executor can, w has one first step and it is a lone tool call).
func (e *Engine) rides(w *Workflow) bool {
	if _, ok := e.Store.(leaseTaker); !ok {
		return false
	}
	if _, ok := e.Exec.(RunWriteRider); !ok {
		return false
	}
	roots := 0
	for _, cs := range w.steps {
		if len(cs.deps) == 0 {
			roots++
			if cs.Tool == "" || cs.forEach != nil || cs.Workflow != "" || cs.Approval != "" {
				return false
			}
		}
	}
	return roots == 1
}

// pending says the run's lease and record are still to be taken.
func (h *runLease) pending() bool {
	if h == nil || h.rl == nil {
		return false
	}
	h.rl.mu.Lock()
	defer h.rl.mu.Unlock()
	return h.rl.pend != nil
}

// takeWrite is the write that takes the lease and creates the record in a claim.
func (h *runLease) takeWrite() loop.KVWrite {
	h.rl.mu.Lock()
	defer h.rl.mu.Unlock()
	return h.rl.ls.(leaseTaker).TakeLeaseWrite(*h.rl.pend, *h.rl.first)
}

// taken records that the lease and record are stored: the lease is held.
func (h *runLease) taken() {
	h.rl.mu.Lock()
	h.rl.held, h.rl.pend = h.rl.pend, nil
	h.rl.mu.Unlock()
}

// flush takes the lease and stores the record on their own, when still pending.
func (h *runLease) flush(ctx context.Context) error {
	if !h.pending() {
		return nil
	}
	h.rl.mu.Lock()
	l, first, alive := *h.rl.pend, *h.rl.first, h.rl.alive
	h.rl.mu.Unlock()
	_, created, err := h.rl.ls.AcquireLeaseKV(context.WithoutCancel(ctx), l, alive, first)
	if err != nil {
		return err
	}
	h.taken() // held: given back at the end
	if !created {
		return fmt.Errorf("the run was created by another process as this one started: %w", loop.ErrSessionBusy)
	}
	return nil
}

// startWrite is what a call's first write carries for the run's start: nothing once it
// is stored, else the take (in a claim) or, in a write that is no claim, the start
// stored first (flush; the take, which the store refuses, when that failed). s.mu is
// held; done, when not nil, lets go of it.
func (s *sched) startWrite(w loop.RunWrite) ([]loop.KVWrite, func(error)) {
	if !s.lease.pending() {
		s.mu.Unlock()
		return nil, nil
	}
	take := s.lease.takeWrite()
	if !w.Claim {
		if err := s.flushStart(); err == nil {
			s.mu.Unlock()
			return nil, nil
		}
	}
	return []loop.KVWrite{take}, func(err error) {
		if err == nil {
			s.lease.taken()
			s.held.open()
		} else if s.startErr == nil {
			s.startErr = fmt.Errorf("workflow %s run %s: %w", s.w.Name, s.rec.RunID, err)
			s.cancel(s.startErr)
		}
		s.mu.Unlock()
	}
}

// flushStart stores the run's start on its own when it is still pending (before any
// other write of the run); a start that failed, now or before, fails every write of the
// run, which stores nothing then. s.mu is held.
func (s *sched) flushStart() error {
	if s.startErr != nil {
		return s.startErr
	}
	if err := s.lease.flush(s.ctx); err != nil {
		s.startErr = fmt.Errorf("workflow %s run %s: %w", s.w.Name, s.rec.RunID, err)
		s.cancel(s.startErr)
		return s.startErr
	}
	s.held.open()
	return nil
}

// heldEvents holds a ridden start's events until the start is stored (open), then
// gives them out in order and lets later ones through; a start that fails never opens.
// Events are given out under mu, so none overtakes the held ones.
type heldEvents struct {
	mu     sync.Mutex
	emit   func(Event)
	held   []Event
	opened bool
}

func (h *heldEvents) event(ev Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.opened {
		h.held = append(h.held, ev)
		return
	}
	h.emit(ev)
}

// open gives out the held events (once); nil does nothing.
func (h *heldEvents) open() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.opened {
		h.opened = true
		for _, ev := range h.held {
			h.emit(ev)
		}
		h.held = nil
	}
}
