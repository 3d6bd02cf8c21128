package cluster

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/pgtest"
	"github.com/agenthost/agenthost/store/postgres"
)

// admittingRunner refuses the first `refuse` runs as the host's admission does when its
// runs are full, then runs them (a run that stores nothing: the test is the job's fate).
type admittingRunner struct {
	refuse, refused, ran atomic.Int64
}

func (r *admittingRunner) RunWith(_ context.Context, in loop.RunInput, _ func(loop.Event)) (loop.RunResult, error) {
	if r.refuse.Add(-1) >= 0 {
		r.refused.Add(1)
		err := &loop.OverloadError{Reason: "the host's 1 runs and queue of 0 are full", RetryAfter: time.Second}
		return loop.RunResult{SessionID: in.SessionID, RunID: in.RunID, Status: loop.StatusFailed, Err: err}, err
	}
	r.ran.Add(1)
	return loop.RunResult{SessionID: in.SessionID, RunID: in.RunID, Status: loop.StatusCompleted}, nil
}

// A queued run the worker's node refuses at admission ([admission] full) waits in
// River's queue as long as the refusal asks and then runs: its job is done only after
// it ran. The worker used to complete the job at the refusal (the run had no stored
// end, which reads as "did not start for a reason of its own"), and the run was lost.
func TestARunRefusedByTheNodesAdmissionWaitsInTheQueueAndRuns(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t).NewDatabase(t)
	st, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := &admittingRunner{}
	r.refuse.Store(2)
	c, err := New(ctx, Options{URL: url, Runner: r, Store: st, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if err := c.Submit(ctx, loop.RunInput{SessionID: "s1", RunID: "r1", Messages: []loop.Message{loop.UserMessage("hi")}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		done, err := c.Done(ctx, "s1", "r1")
		if err != nil {
			t.Fatal(err)
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job is not done after a minute: refused %d, ran %d", r.refused.Load(), r.ran.Load())
		}
		time.Sleep(50 * time.Millisecond) // polling the job's state, bounded by the deadline
	}
	if r.refused.Load() != 2 || r.ran.Load() != 1 {
		t.Fatalf("refused %d times, ran %d times; want 2 refusals, then one run", r.refused.Load(), r.ran.Load())
	}
}
