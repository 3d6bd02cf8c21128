package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// lease is a lease of the session's run by process pid.
func lease(session, run string, pid int) loop.Lease {
	return loop.Lease{SessionID: session, RunID: run, PID: pid, Host: "test-host", Instance: "i", Heartbeat: t0}
}

// leases: a session's lease has one owner; only the owner renews or releases it, and a
// dead owner's lease is taken over.
func leases(t *testing.T, s loop.SessionStore) {
	ls, ok := s.(loop.Leaser)
	if !ok {
		t.Fatalf("%T has no leases (loop.Leaser)", s)
	}
	ctx := context.Background()
	alive := func(loop.Lease) bool { return true }
	dead := func(loop.Lease) bool { return false }
	a, b := lease("s", "ra", 1), lease("s", "rb", 2)
	if _, err := ls.AcquireLease(ctx, a, alive); err != nil {
		t.Fatal(err)
	}
	held, err := ls.AcquireLease(ctx, b, alive)
	if !errors.Is(err, loop.ErrSessionBusy) || !held.Same(a) {
		t.Fatalf("second owner: %+v %v", held, err)
	}
	if err := ls.RenewLease(ctx, b); !errors.Is(err, loop.ErrLeaseLost) {
		t.Fatalf("renew by a non-owner: %v", err)
	}
	a.Heartbeat = t0.Add(time.Second)
	if err := ls.RenewLease(ctx, a); err != nil {
		t.Fatalf("renew by the owner: %v", err)
	}
	if held, err := ls.AcquireLease(ctx, b, dead); err != nil || !held.Same(a) || !held.Heartbeat.Equal(a.Heartbeat) {
		t.Fatalf("take-over of a dead owner: %+v %v", held, err)
	}
	if err := ls.ReleaseLease(ctx, a); !errors.Is(err, loop.ErrLeaseLost) {
		t.Fatalf("release by the old owner: %v", err)
	}
	if err := ls.ReleaseLease(ctx, b); err != nil {
		t.Fatal(err)
	}
	if _, err := ls.AcquireLease(ctx, a, alive); err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
}
