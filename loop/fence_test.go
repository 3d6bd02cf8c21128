package loop

import (
	"context"
	"errors"
	"testing"
)

// The zombie of issue 29: a run whose process stalled past its lease while another
// process recovered its session (closed it as aborted) resumes and finishes. Its writes,
// the final record included, are refused: the session keeps one run_finished for the
// run, and the record agrees with it.
func TestFence_AResumedRunCannotOverwriteTheRecoveredSession(t *testing.T) {
	st := NewMemoryStore()
	m := answerModel{gate: make(chan struct{}), started: make(chan struct{}, 1)}
	done := make(chan RunResult, 1)
	go func() { res, _ := leaseAgent(t, st, m).Run(context.Background(), userInput("s", "r1")); done <- res }()
	<-m.started

	// Another process judges the lease dead, takes it and closes the run.
	ctx := context.Background()
	rescuer := newLease("s", "")
	rescuer.Instance = "another-process"
	if _, err := st.AcquireLease(ctx, rescuer, func(Lease) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if n, err := closeDeadRuns(WithFence(ctx, rescuer), st, "s"); n != 1 || err != nil {
		t.Fatalf("recovery closed %d runs: %v", n, err)
	}
	if err := st.ReleaseLease(ctx, rescuer); err != nil {
		t.Fatal(err)
	}
	stored, _ := st.Load(ctx, "s")

	close(m.gate) // the stalled run wakes up and carries on
	res := <-done
	if !errors.Is(res.Err, ErrLeaseLost) {
		t.Fatalf("the resumed run: %s %v, want ErrLeaseLost", res.Status, res.Err)
	}
	after, _ := st.Load(ctx, "s")
	if len(after) != len(stored) {
		t.Fatalf("the resumed run stored %d entries after losing its lease", len(after)-len(stored))
	}
	ends := 0
	for _, e := range after {
		if e.Kind == EntryEvent && e.Event.Type == EventRunFinished {
			ends++
			if d := e.Event.Data.(*RunFinishedData); d.Status != StatusAborted {
				t.Fatalf("stored end %s", d.Status)
			}
		}
	}
	rs, _ := st.Runs(ctx, "s")
	if ends != 1 || len(rs) != 1 || rs[0].Status != StatusAborted {
		t.Fatalf("%d run_finished, records %+v: want one end, aborted, in both", ends, rs)
	}
}

// A fence applies to its own session only: a nested run writes its session under the
// context of its caller's tool call, which carries the caller's run.
func TestFence_AppliesToItsOwnSessionOnly(t *testing.T) {
	st := NewMemoryStore()
	l := newLease("a", "r")
	ctx := WithFence(context.Background(), l)
	if _, ok := FenceOf(ctx, "b"); ok {
		t.Fatal("a fence of session a applies to session b")
	}
	if err := st.Append(ctx, "b", Entry{Seq: 1, Kind: EntryMessage, Message: &Message{Role: RoleUser}}); err != nil {
		t.Fatalf("a write to another session: %v", err)
	}
	if err := st.Append(ctx, "a", Entry{Seq: 1, Kind: EntryMessage, Message: &Message{Role: RoleUser}}); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("a fenced write to a session without its lease: %v", err)
	}
}
