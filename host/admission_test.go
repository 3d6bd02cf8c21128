package host

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
)

const admitBound = 10 * time.Second

// queuedRun is an entry waiting in the admission queue in a goroutine.
type queuedRun struct {
	mu        sync.Mutex
	positions []int
	done      chan error
	leave     func()
}

func startQueued(ctx context.Context, a *admission, user string) *queuedRun {
	q := &queuedRun{done: make(chan error, 1)}
	go func() {
		leave, err := a.enter(ctx, user, func(p int) {
			q.mu.Lock()
			q.positions = append(q.positions, p)
			q.mu.Unlock()
		})
		q.leave = leave
		q.done <- err
	}()
	return q
}

func (q *queuedRun) told() []int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]int(nil), q.positions...)
}

func (q *queuedRun) result(t *testing.T) error {
	t.Helper()
	select {
	case err := <-q.done:
		return err
	case <-time.After(admitBound):
		t.Fatal("the queued entry neither got a place nor left")
		return nil
	}
}

func (q *queuedRun) stillWaiting(t *testing.T) {
	t.Helper()
	select {
	case err := <-q.done:
		t.Fatalf("the entry left the queue (%v) while no place was free", err)
	default:
	}
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(admitBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after %s", what, admitBound)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func mustEnter(t *testing.T, a *admission, user string) func() {
	t.Helper()
	leave, err := a.enter(context.Background(), user, nil)
	if err != nil {
		t.Fatalf("%s was not admitted: %v", user, err)
	}
	return leave
}

func wantOverload(t *testing.T, err error, reason string) {
	t.Helper()
	var oe *loop.OverloadError
	if !errors.As(err, &oe) || !errors.Is(err, loop.ErrOverloaded) || !strings.Contains(oe.Reason, reason) || oe.RetryAfter < time.Millisecond {
		t.Fatalf("got %v, want an overload refusal about %q", err, reason)
	}
}

// Past max_runs an entry waits in the queue, told its position as it moves up, and
// gets the place of the run that leaves, in arrival order; past the queue it is
// refused with a Retry-After.
func TestAdmissionQueuesInArrivalOrderAndRefusesPastTheQueue(t *testing.T) {
	a := newAdmission(manifest.AdmissionConfig{MaxRuns: 2, Queue: 2, QueueTimeout: manifest.Duration(time.Hour)})
	l1, l2 := mustEnter(t, a, "u1"), mustEnter(t, a, "u2")
	first := startQueued(context.Background(), a, "u3")
	poll(t, "queued", func() bool { _, q := a.load(); return q == 1 })
	second := startQueued(context.Background(), a, "u4")
	poll(t, "queued", func() bool { _, q := a.load(); return q == 2 })

	_, err := a.enter(context.Background(), "u5", nil)
	wantOverload(t, err, "queue of 2 are full")
	if s, ok := loop.RetryAfterOf(err); !ok || s != 1 {
		t.Fatalf("Retry-After %d %v, want 1 second", s, ok)
	}

	l1()
	l1() // leave is once: a second call gives back nothing more
	if err := first.result(t); err != nil {
		t.Fatal(err)
	}
	second.stillWaiting(t)
	poll(t, "told it moved up", func() bool { return len(second.told()) == 2 })
	if got := second.told(); got[0] != 2 || got[1] != 1 {
		t.Fatalf("positions told %v, want [2 1]", got)
	}
	if r, q := a.load(); r != 2 || q != 1 {
		t.Fatalf("running %d queued %d, want 2 and 1", r, q)
	}
	l2()
	if err := second.result(t); err != nil {
		t.Fatal(err)
	}
	first.leave()
	second.leave()
	if r, q := a.load(); r != 0 || q != 0 {
		t.Fatalf("running %d queued %d after every entry left, want 0 and 0", r, q)
	}
}

// A client that goes away while queued frees its place in the queue at once: the run
// behind it moves up, and the queue takes a newcomer in its stead.
func TestAdmissionClientThatDisconnectsWhileQueuedFreesItsPlace(t *testing.T) {
	a := newAdmission(manifest.AdmissionConfig{MaxRuns: 1, Queue: 2, QueueTimeout: manifest.Duration(time.Hour)})
	leave := mustEnter(t, a, "u1")
	ctx, disconnect := context.WithCancel(context.Background())
	gone := startQueued(ctx, a, "u2")
	poll(t, "queued", func() bool { _, q := a.load(); return q == 1 })
	behind := startQueued(context.Background(), a, "u3")
	poll(t, "queued", func() bool { _, q := a.load(); return q == 2 })

	disconnect()
	if err := gone.result(t); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "left the admission queue") {
		t.Fatalf("got %v, want the cancellation", err)
	}
	poll(t, "moved up", func() bool { g := behind.told(); return len(g) > 0 && g[len(g)-1] == 1 })
	newcomer := startQueued(context.Background(), a, "u4")
	poll(t, "queued", func() bool { _, q := a.load(); return q == 2 })
	leave()
	if err := behind.result(t); err != nil {
		t.Fatal(err)
	}
	behind.leave()
	if err := newcomer.result(t); err != nil {
		t.Fatal(err)
	}
	newcomer.leave()
	if r, q := a.load(); r != 0 || q != 0 || len(a.users) != 0 {
		t.Fatalf("running %d queued %d users %v, want nothing held", r, q, a.users)
	}
}

// A queued run whose own deadline passes leaves the queue with that error; one that
// waits past queue_timeout leaves with an overload refusal that says so.
func TestAdmissionQueuedRunLeavesAtItsDeadlineOrTheQueueTimeout(t *testing.T) {
	a := newAdmission(manifest.AdmissionConfig{MaxRuns: 1, Queue: 4, QueueTimeout: manifest.Duration(time.Hour)})
	leave := mustEnter(t, a, "u1")
	defer leave()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := startQueued(ctx, a, "u2").result(t); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "left the admission queue after") {
		t.Fatalf("got %v, want the run's deadline", err)
	}
	a.queueTimeout = 50 * time.Millisecond
	wantOverload(t, startQueued(context.Background(), a, "u3").result(t), "within queue_timeout 50ms")
	if r, q := a.load(); r != 1 || q != 0 || a.users["u2"]+a.users["u3"] != 0 {
		t.Fatalf("running %d queued %d users %v: the runs that left still hold something", r, q, a.users)
	}
}

// A place handed to a waiter at the moment its client goes away is not lost: it goes
// on to the next in the queue (run many times under -race to meet the interleavings).
func TestAdmissionPlaceHandedToAWaiterThatLeftGoesToTheNext(t *testing.T) {
	for range 200 {
		a := newAdmission(manifest.AdmissionConfig{MaxRuns: 1, Queue: 2, QueueTimeout: manifest.Duration(time.Hour)})
		leave := mustEnter(t, a, "u1")
		ctx, disconnect := context.WithCancel(context.Background())
		racer := startQueued(ctx, a, "u2")
		poll(t, "queued", func() bool { _, q := a.load(); return q == 1 })
		next := startQueued(context.Background(), a, "u3")
		poll(t, "queued", func() bool { _, q := a.load(); return q == 2 })
		go disconnect()
		leave()
		if err := racer.result(t); err == nil {
			racer.leave()
		}
		if err := next.result(t); err != nil {
			t.Fatal(err)
		}
		next.leave()
		if r, q := a.load(); r != 0 || q != 0 || len(a.users) != 0 {
			t.Fatalf("running %d queued %d users %v, want nothing held", r, q, a.users)
		}
	}
}

// per_user_in_flight counts a user's runs in flight and queued: one more is refused
// while other users are still admitted; a run that ends makes room for the next.
func TestAdmissionPerUserInFlight(t *testing.T) {
	a := newAdmission(manifest.AdmissionConfig{PerUserInFlight: 2})
	l1, l2 := mustEnter(t, a, "ana"), mustEnter(t, a, "ana")
	_, err := a.enter(context.Background(), "ana", nil)
	wantOverload(t, err, `user "ana" has 2 runs in flight or queued (per_user_in_flight)`)
	mustEnter(t, a, "ben")()
	l1()
	mustEnter(t, a, "ana")()
	l2()
}

// per_user_per_minute is a bucket of a minute's runs per user: the next run past it is
// refused with the wait until the bucket has one again, other users are not.
func TestAdmissionPerUserPerMinute(t *testing.T) {
	a := newAdmission(manifest.AdmissionConfig{PerUserPerMinute: 3})
	for range 3 {
		mustEnter(t, a, "ana")()
	}
	_, err := a.enter(context.Background(), "ana", nil)
	wantOverload(t, err, `user "ana" started 3 runs in the last minute (per_user_per_minute)`)
	var oe *loop.OverloadError
	errors.As(err, &oe)
	if oe.RetryAfter <= 0 || oe.RetryAfter > 20*time.Second {
		t.Fatalf("Retry-After %s, want the time one run takes to refill (at most 20s)", oe.RetryAfter)
	}
	mustEnter(t, a, "ben")()
	if n := len(a.users); n != 0 {
		t.Fatalf("users held %v after every run left", a.users)
	}
}

// Without the table, the door admits everything and holds nothing.
func TestAdmissionOffWithoutTheTable(t *testing.T) {
	if a := newAdmission(manifest.AdmissionConfig{}); a != nil {
		t.Fatalf("got %+v", a)
	}
	var a *admission
	leave, err := a.enter(context.Background(), "u", nil)
	if err != nil {
		t.Fatal(err)
	}
	leave()
}

// The door asks the admission for runs and for tool calls outside a run alike: a run
// that waits in the queue hears its position and, when the wait ends without a place,
// an admission error and a failed run_finished, and nothing of it is stored; a tool call
// past a full queue is not made, with the refusal as its error result (`mcp serve`'s
// form); once the place is free, both go through.
func TestTheDoorAdmitsRunsAndToolCallsAlike(t *testing.T) {
	h := openDoorHost(t)
	ctx := context.Background()
	ana := access.Principal{ID: "u-ana", Name: "ana", Role: access.RoleUser}
	h.admission = newAdmission(manifest.AdmissionConfig{MaxRuns: 1, Queue: 1, QueueTimeout: manifest.Duration(50 * time.Millisecond)})
	leave := mustEnter(t, h.admission, "someone")

	var seen []string
	res, err := h.Door().Run(ctx, ana, loop.RunInput{SessionID: "s-queued", Messages: []loop.Message{loop.UserMessage("hi")}}, func(e loop.Event) {
		switch d := e.Data.(type) {
		case *loop.QueuedData:
			seen = append(seen, fmt.Sprintf("queued %d", d.Position))
		case *loop.ErrorData:
			seen = append(seen, "error "+d.Kind)
		case *loop.RunFinishedData:
			seen = append(seen, "run_finished "+string(d.Status))
		default:
			seen = append(seen, string(e.Type))
		}
	})
	wantOverload(t, err, "within queue_timeout 50ms")
	if got := strings.Join(seen, ", "); got != "queued 1, error admission, run_finished failed" || res.Status != loop.StatusFailed {
		t.Fatalf("events %q, status %s", got, res.Status)
	}
	if runs, err := h.Store.Runs(ctx, "s-queued"); err != nil || len(runs) != 0 {
		t.Fatalf("a run that never began stored %v (%v)", runs, err)
	}

	h.admission.queueTimeout = time.Hour
	waiting := startQueued(ctx, h.admission, "someone else")
	poll(t, "queued", func() bool { _, q := h.admission.load(); return q == 1 })
	out, cres := h.Door().CallTool(ctx, ana, "calc", []byte(`{"expression":"6*7"}`), CallOptions{})
	wantOverload(t, cres.Err, "queue of 1 are full")
	if !out.IsError || !strings.HasPrefix(out.Text(), "Error: the call was not made: overloaded: ") {
		t.Fatalf("tool result %q", out.Text())
	}
	leave()
	if err := waiting.result(t); err != nil {
		t.Fatal(err)
	}
	waiting.leave()
	if out, cres := h.Door().CallTool(ctx, ana, "calc", []byte(`{"expression":"6*7"}`), CallOptions{}); out.Text() != "42" {
		t.Fatalf("with a free place: %q %v", out.Text(), cres.Err)
	}
	if res, err := h.Door().Run(ctx, ana, loop.RunInput{Messages: []loop.Message{loop.UserMessage("hi")}}, nil); err != nil || res.Status != loop.StatusCompleted {
		t.Fatalf("with a free place: %s %v", res.Status, err)
	}
	if r, q := h.admission.load(); r != 0 || q != 0 {
		t.Fatalf("running %d queued %d after the entries ended", r, q)
	}
}
