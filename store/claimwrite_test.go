package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/loop/looptest"
)

// A run's claim of its session rides on its first write (loop.ClaimAppender): a run that
// answers at once is two commits, its first write (with the lease) and its end (which
// gives the lease back); a direct call is two as well. They were three: the lease on its
// own first.
func TestL21_ARunsLeaseIsTakenInItsFirstWritesTransaction(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	a := newAgent(t, s, "hi")
	before := s.w.commits.Load()
	res, err := a.RunWith(ctx, loop.RunInput{SessionID: "c1", Messages: []loop.Message{loop.UserMessage("hello")}}, nil)
	if err != nil || res.Status != loop.StatusCompleted {
		t.Fatalf("%v %+v", err, res)
	}
	if got := s.w.commits.Load() - before; got != 2 {
		t.Fatalf("a one-call run committed %d times, want 2 (first write with the lease, end)", got)
	}
	if _, held, err := s.Lease(ctx, "c1"); err != nil || held {
		t.Fatalf("the lease was not given back with the end: held=%v %v", held, err)
	}
	if st := runStatus(t, s, "c1", res.RunID); st != loop.StatusCompleted {
		t.Fatalf("run stored %q", st)
	}
}

// takenAfterStart is the SQLite store whose session is taken (taken) right after a run's
// start has read it, before the run's first write.
type takenAfterStart struct {
	*SQLite
	taken func()
}

func (s takenAfterStart) ClaimState(ctx context.Context, session, runID string) (loop.ClaimState, error) {
	cs, err := s.SQLite.ClaimState(ctx, session, runID)
	s.taken()
	return cs, err
}

// The claim in the first write refuses what the claim at start refused: a session that
// another live process took after this run started (ErrSessionBusy), and a run id the
// session used meanwhile (ErrRunExists). The run fails there, having stored nothing and
// called no model.
func TestL21_AClaimInTheFirstWriteRefusesASessionTakenMeanwhile(t *testing.T) {
	for _, tc := range []struct {
		name  string
		taken func(t *testing.T, s *SQLite)
		want  error
	}{
		{"busy", func(t *testing.T, s *SQLite) {
			other := loop.Lease{SessionID: "c2", RunID: "theirs", PID: 1, Host: "another-node", Instance: "other", Heartbeat: time.Now().UTC()}
			if _, err := s.AcquireLease(context.Background(), other, func(loop.Lease) bool { return true }); err != nil {
				t.Fatal(err)
			}
		}, loop.ErrSessionBusy},
		{"run id used", func(t *testing.T, s *SQLite) {
			if err := s.SaveRun(context.Background(), loop.RunRecord{ID: "r1", SessionID: "c2", Status: loop.StatusCompleted}); err != nil {
				t.Fatal(err)
			}
		}, loop.ErrRunExists},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			ctx := context.Background()
			m := looptest.NewModel(looptest.Turn{Text: "never"})
			a, err := loop.New(loop.Config{Name: "p", Model: m, Store: takenAfterStart{s, func() { tc.taken(t, s) }}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.RunWith(ctx, loop.RunInput{SessionID: "c2", RunID: "r1", Messages: []loop.Message{loop.UserMessage("hello")}}, nil)
			if res.Status != loop.StatusFailed || !errors.Is(err, tc.want) {
				t.Fatalf("got %s, %v; want failed, %v", res.Status, err, tc.want)
			}
			if n := len(m.Requests()); n != 0 {
				t.Fatalf("the model was called %d times", n)
			}
			es, err := s.Load(ctx, "c2")
			if err != nil || len(es) != 0 {
				t.Fatalf("stored %d entries (%v), want none", len(es), err)
			}
			if tc.want == loop.ErrRunExists && runStatus(t, s, "c2", "r1") != loop.StatusCompleted {
				t.Fatal("the failed run overwrote the record of the run whose id it took")
			}
		})
	}
}

// The claim in the first write takes over a lease whose holder is dead (its heartbeat
// older than LeaseTTL) that appeared after the run started, as AcquireLease does: the
// run completes, and its end gives the lease back.
func TestL21_AClaimInTheFirstWriteTakesOverADeadHoldersLease(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	stale := loop.Lease{SessionID: "c3", RunID: "theirs", PID: 1, Host: "another-node", Instance: "other", Heartbeat: time.Now().Add(-time.Hour).UTC()}
	m := looptest.NewModel(looptest.Turn{Text: "answer"})
	a, err := loop.New(loop.Config{Name: "p", Model: m, Store: takenAfterStart{s, func() {
		if _, err := s.AcquireLease(ctx, stale, func(loop.Lease) bool { return false }); err != nil {
			t.Fatal(err)
		}
	}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.RunWith(ctx, loop.RunInput{SessionID: "c3", RunID: "r1", Messages: []loop.Message{loop.UserMessage("hello")}}, nil)
	if err != nil || res.Status != loop.StatusCompleted {
		t.Fatalf("got %s, %v; want completed over the dead holder's lease", res.Status, err)
	}
	if _, held, err := s.Lease(ctx, "c3"); err != nil || held {
		t.Fatalf("after the run the session's lease is held: %v, %v", held, err)
	}
	if runStatus(t, s, "c3", "r1") != loop.StatusCompleted {
		t.Fatal("the run's record is not stored completed")
	}
}
