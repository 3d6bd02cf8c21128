package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// fencing: holder A takes a session's lease and writes; its lease expires and B takes
// the session over and closes A's run. A, resumed, is refused every write (an append, a
// run record, an AppendRun that would end its run and release a lease) with
// loop.ErrLeaseLost, and the session and the record stay as B left them. A write without
// a fence (a store used without leases) is not affected.
func fencing(t *testing.T, s loop.SessionStore) {
	ls, ok := s.(loop.Leaser)
	if !ok {
		t.Fatalf("%T has no leases (loop.Leaser)", s)
	}
	ctx := context.Background()
	a, b := lease("f", "ra", 1), lease("f", "", 2)
	ctxA, ctxB := loop.WithFence(ctx, a), loop.WithFence(ctx, b)
	if _, err := ls.AcquireLease(ctx, a, func(loop.Lease) bool { return true }); err != nil {
		t.Fatal(err)
	}
	started := loop.RunRecord{ID: "ra", SessionID: "f", Started: t0}
	if err := s.SaveRun(ctxA, started); err != nil {
		t.Fatalf("the holder's record: %v", err)
	}
	if err := s.Append(ctxA, "f", entries("f", "ra", 1, 2)...); err != nil {
		t.Fatalf("the holder's append: %v", err)
	}

	// A's heartbeat expires: B takes the session and closes ra as aborted.
	if _, err := ls.AcquireLease(ctx, b, func(loop.Lease) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctxB, "f", entries("f", "ra", 3, 1)...); err != nil {
		t.Fatalf("the new holder's append: %v", err)
	}
	aborted := started
	aborted.Status, aborted.Reason, aborted.Ended = loop.StatusAborted, loop.ReasonCancelled, t0.Add(time.Minute)
	if err := s.SaveRun(ctxB, aborted); err != nil {
		t.Fatalf("the new holder's record: %v", err)
	}

	failed := started
	failed.Status, failed.Reason, failed.Ended = loop.StatusFailed, loop.ReasonError, t0.Add(time.Hour)
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, loop.ErrLeaseLost) {
			t.Errorf("%s by the old holder: %v, want ErrLeaseLost", what, err)
		}
	}
	check := func(when string) {
		t.Helper()
		if es, _ := s.Load(ctx, "f"); len(es) != 3 {
			t.Fatalf("%s: %d entries, want the 3 written under a held lease", when, len(es))
		}
		if rs, _ := s.Runs(ctx, "f"); len(rs) != 1 || rs[0].Status != loop.StatusAborted || !rs[0].Ended.Equal(aborted.Ended) {
			t.Fatalf("%s: runs %+v, want the new holder's record", when, rs)
		}
	}
	refused("an append at the next seq", s.Append(ctxA, "f", entries("f", "ra", 4, 1)...))
	refused("an append at a taken seq", s.Append(ctxA, "f", entries("f", "ra", 3, 1)...))
	refused("a run record", s.SaveRun(ctxA, failed))
	if ra, ok := s.(loop.RunAppender); ok {
		refused("the final AppendRun", ra.AppendRun(ctxA, failed, entries("f", "ra", 4, 1)...))
		refused("a final record alone", ra.AppendRun(ctxA, failed))
	}
	check("after the old holder's writes")
	if held, err := ls.AcquireLease(ctx, lease("f", "rc", 3), func(loop.Lease) bool { return true }); !errors.Is(err, loop.ErrSessionBusy) || !held.Same(b) {
		t.Fatalf("the new holder's lease after the old holder's final write: %+v %v", held, err)
	}

	// Released, the session holds no lease: A is still refused, an unfenced write is not.
	if err := ls.ReleaseLease(ctx, b); err != nil {
		t.Fatal(err)
	}
	refused("an append after the release", s.Append(ctxA, "f", entries("f", "ra", 4, 1)...))
	refused("a run record after the release", s.SaveRun(ctxA, failed))
	check("after the release")
	if err := s.Append(ctx, "f", entries("f", "x", 4, 1)...); err != nil {
		t.Fatalf("an unfenced append: %v", err)
	}
}
