package host

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
	"github.com/agenthost/agenthost/sandbox"
)

// admission is the host's run capacity, the [admission] table: at most maxRuns entries
// of the door in flight, up to queue more waiting for a place in arrival order, and each
// user's share (runs in flight or queued, runs per minute). The door asks it for every
// entry it admits (Door.run, Door.CallTool) after authorising it and before the run
// begins, so an entry refused here began nothing: no record, no audit, no span. Nested
// runs and sampling are part of the run that makes them and are not asked (a run that
// waited for a place behind its own children would never get one).
//
// A place is handed from the run that leaves straight to the head of the queue, so a
// newcomer cannot overtake a run that waited.
type admission struct {
	maxRuns, queueCap, perUserInFlight int
	queueTimeout                       time.Duration
	rates                              *userRates // per_user_per_minute; nil: none

	mu      sync.Mutex
	running int
	queue   []*waiter
	users   map[string]int // entries in flight or queued, by user
}

// waiter is a run in the queue. ready is closed when it is handed a place (granted,
// under mu); moved tells it that its position may have changed.
type waiter struct {
	user    string
	granted bool
	ready   chan struct{}
	moved   chan struct{}
}

// admitRetry is the Retry-After of a refusal that no clock decides (a full queue, a
// user's runs in flight): places free as runs end.
const admitRetry = time.Second

func newAdmission(c manifest.AdmissionConfig) *admission {
	if c.MaxRuns == 0 && c.PerUserInFlight == 0 && c.PerUserPerMinute == 0 {
		return nil
	}
	a := &admission{maxRuns: c.MaxRuns, queueCap: c.Queue, perUserInFlight: c.PerUserInFlight,
		queueTimeout: time.Duration(c.QueueTimeout), rates: newUserRates(c.PerUserPerMinute), users: map[string]int{}}
	if a.queueTimeout == 0 {
		a.queueTimeout = manifest.DefaultQueueTimeout
	}
	return a
}

// enter admits an entry for user: at once, after a wait in the queue (queued is told
// each position, 1 being next), or not (a *loop.OverloadError, or what ended the wait).
// The entry holds its place until it calls leave, once. A nil admission admits all.
func (a *admission) enter(ctx context.Context, user string, queued func(position int)) (leave func(), err error) {
	if a == nil {
		return func() {}, nil
	}
	a.mu.Lock()
	w, err := a.take(user)
	a.mu.Unlock()
	if err != nil {
		return nil, err
	}
	leave = sync.OnceFunc(func() { a.leave(user) })
	if w == nil {
		return leave, nil
	}
	if err := a.wait(ctx, w, queued); err != nil {
		return nil, err
	}
	return leave, nil
}

// take decides, under mu, whether user's entry runs now (nil waiter), queues (its
// waiter) or is refused.
func (a *admission) take(user string) (*waiter, error) {
	if a.perUserInFlight > 0 && a.users[user] >= a.perUserInFlight {
		return nil, &loop.OverloadError{RetryAfter: admitRetry,
			Reason: fmt.Sprintf("user %q has %d runs in flight or queued (per_user_in_flight)", user, a.users[user])}
	}
	free := a.maxRuns == 0 || (a.running < a.maxRuns && len(a.queue) == 0)
	if !free && len(a.queue) >= a.queueCap {
		return nil, &loop.OverloadError{RetryAfter: admitRetry,
			Reason: fmt.Sprintf("the host's %d runs in flight and queue of %d are full (max_runs, queue)", a.maxRuns, a.queueCap)}
	}
	if delay := a.rates.take(user, time.Now()); delay > 0 {
		return nil, &loop.OverloadError{RetryAfter: delay,
			Reason: fmt.Sprintf("user %q started %d runs in the last minute (per_user_per_minute)", user, a.rates.perMinute)}
	}
	a.users[user]++
	if free {
		a.running++
		return nil, nil
	}
	w := &waiter{user: user, ready: make(chan struct{}), moved: make(chan struct{}, 1)}
	a.queue = append(a.queue, w)
	return w, nil
}

// wait waits in the queue until w is handed a place, telling queued its position as it
// changes. A wait that ctx or queue_timeout ends takes w out of the queue (a place
// handed to it meanwhile goes on to the next).
func (a *admission) wait(ctx context.Context, w *waiter, queued func(int)) error {
	timer := time.NewTimer(a.queueTimeout)
	defer timer.Stop()
	start, told := time.Now(), 0
	for {
		if pos := a.position(w); pos > 0 && pos != told && queued != nil {
			told = pos
			queued(pos)
		}
		select {
		case <-w.ready:
			return nil
		case <-w.moved:
			continue
		case <-ctx.Done():
			a.abandon(w)
			return fmt.Errorf("left the admission queue after %s: %w", time.Since(start).Round(time.Millisecond), context.Cause(ctx))
		case <-timer.C:
			a.abandon(w)
			return &loop.OverloadError{RetryAfter: admitRetry,
				Reason: fmt.Sprintf("no place among the host's %d runs in flight within queue_timeout %s", a.maxRuns, a.queueTimeout)}
		}
	}
}

// position is w's place in the queue (1: next), or 0 once it left it.
func (a *admission) position(w *waiter) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Index(a.queue, w) + 1
}

// abandon takes a waiter whose wait ended out of the queue and gives back its share;
// a place it was handed in the meantime goes to the next.
func (a *admission) abandon(w *waiter) {
	a.mu.Lock()
	if w.granted {
		a.mu.Unlock()
		a.leave(w.user)
		return
	}
	if i := slices.Index(a.queue, w); i >= 0 {
		a.queue = slices.Delete(a.queue, i, i+1)
		a.movedLocked(i)
	}
	a.dropUserLocked(w.user)
	a.mu.Unlock()
}

// leave gives back an entry's place: to the head of the queue if any waits.
func (a *admission) leave(user string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.dropUserLocked(user)
	if len(a.queue) == 0 {
		a.running--
		return
	}
	next := a.queue[0]
	a.queue = slices.Delete(a.queue, 0, 1)
	next.granted = true
	close(next.ready)
	a.movedLocked(0)
}

func (a *admission) dropUserLocked(user string) {
	if a.users[user]--; a.users[user] <= 0 {
		delete(a.users, user)
	}
}

// movedLocked tells the waiters from index i on that they moved up.
func (a *admission) movedLocked(i int) {
	for _, w := range a.queue[i:] {
		select {
		case w.moved <- struct{}{}:
		default:
		}
	}
}

// load is the runs in flight and queued, for tests.
func (a *admission) load() (running, queued int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.running, len(a.queue)
}

// enter is the door's admission of an entry it authorised (admission.enter): while it
// waits in the queue, emit gets a queued event for each position; a wait that ends
// without a place ends the stream it began with an error and a failed run_finished, so
// a client that saw it queued sees why it never ran. The context the entry runs under
// lets its tool calls wait for a plugin's instance as long as the run allows
// (sandbox.WaitForInstance): the admission is what bounds that wait.
func (d *Door) enter(ctx context.Context, in *loop.RunInput, agent string, emit func(loop.Event)) (context.Context, func(), error) {
	began := false
	event := func(typ loop.EventType, data any) {
		if emit != nil {
			emit(loop.Event{Time: time.Now(), SessionID: in.SessionID, RunID: in.RunID, Agent: agent, Type: typ, Data: data, TraceID: in.TraceID})
		}
	}
	leave, err := d.h.admission.enter(ctx, in.User, func(position int) {
		began = true
		event(loop.EventQueued, &loop.QueuedData{Position: position})
	})
	if err != nil {
		if began {
			event(loop.EventError, &loop.ErrorData{Kind: "admission", Message: err.Error(), Retryable: true})
			event(loop.EventRunFinished, &loop.RunFinishedData{Status: loop.StatusFailed, Reason: loop.ReasonError})
		}
		return ctx, nil, err
	}
	return sandbox.WaitForInstance(ctx), leave, nil
}
