package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// Issue 47: a step whose session is held by an earlier attempt of its run (a process that
// could not give the lease back during a database restart, or one paused past it) waits
// for the session and then runs; the run completes. It used to fail the step with
// "session already has a run in progress", and the run with it.
func TestEngine_AStepWhoseSessionAnEarlierAttemptHoldsWaitsForItAndRuns(t *testing.T) {
	r := newRig(t, loop.ToolPolicy{})
	ctx := context.Background()
	session := StepSession("words", "", "rb", "collect", -1)
	earlier := loop.Lease{SessionID: session, RunID: "rb-attempt-1", PID: 1, Host: "another-node", Instance: "earlier", Heartbeat: time.Now().UTC()}
	if _, err := r.store.AcquireLease(ctx, earlier, func(loop.Lease) bool { return true }); err != nil {
		t.Fatal(err)
	}
	done := make(chan Result, 1)
	go func() {
		res, err := r.engine.Run(ctx, pipeline(t, 2), RunInput{RunID: "rb", Inputs: json.RawMessage(`{"text":"a b"}`)}, nil)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	deadline := time.Now().Add(10 * time.Second)
	for { // the step has started and is waiting for its session
		rec, ok, err := LoadRecord(ctx, r.store, "words", "rb")
		if err != nil {
			t.Fatal(err)
		}
		if ok && rec.Steps["collect"] != nil {
			if s := rec.Steps["collect"]; s.Status != StatusRunning {
				t.Fatalf("the step did not wait: %+v", s)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the step never started")
		}
		time.Sleep(5 * time.Millisecond) // polling, bounded by the deadline
	}
	select {
	case res := <-done:
		t.Fatalf("the run ended while the session was held: %s (%s)", res.Record.Status, res.Record.Error)
	case <-time.After(100 * time.Millisecond): // a few of its tries
	}
	if r.count("split") != 0 {
		t.Fatal("the step ran while an earlier attempt held its session")
	}
	if err := r.store.ReleaseLease(ctx, earlier); err != nil { // the earlier attempt gives it back
		t.Fatal(err)
	}
	res := <-done
	if res.Record.Status != RunCompleted || res.Record.Outputs["joined"] != "A-B" {
		t.Fatalf("status %s (%s), outputs %v", res.Record.Status, res.Record.Error, res.Record.Outputs)
	}
	if r.count("split") != 1 || res.Record.Steps["collect"].Attempts != 1 {
		t.Fatalf("split ran %d times, %d attempts recorded (the wait is not an attempt)", r.count("split"), res.Record.Steps["collect"].Attempts)
	}
}

// unavailableStore is a MemoryStore whose appends to one session fail as a restarting
// database's do (an error marked StoreUnavailable) while down is set.
type unavailableStore struct {
	*loop.MemoryStore
	session string
	down    atomic.Bool
}

type unavailableErr struct{}

func (unavailableErr) Error() string          { return "connection refused" }
func (unavailableErr) StoreUnavailable() bool { return true }

func (s *unavailableStore) Append(ctx context.Context, id string, entries ...loop.Entry) error {
	if id == s.session && s.down.Load() {
		return unavailableErr{}
	}
	return s.MemoryStore.Append(ctx, id, entries...)
}

// Issue 47: a step cut short because the store was unavailable did not fail: the run ends
// with the store's error (a cluster retries its job), the step is left running, and the
// resume runs it and completes. Before, the step was recorded failed and, when the record
// could be written, the run ended failed for good.
func TestEngine_AStepCutShortByTheStoreIsNotAFailure(t *testing.T) {
	var st *unavailableStore
	r := newRigOn(t, loop.ToolPolicy{}, func(m *loop.MemoryStore) loop.SessionStore {
		st = &unavailableStore{MemoryStore: m, session: StepSession("words", "", "ro", "collect", -1)}
		return st
	})
	st.down.Store(true)
	ctx := context.Background()
	w := pipeline(t, 2)
	res, err := r.engine.Run(ctx, w, RunInput{RunID: "ro", Inputs: json.RawMessage(`{"text":"a b"}`)}, nil)
	var u interface{ StoreUnavailable() bool }
	if !errors.As(err, &u) {
		t.Fatalf("the run's error %v does not say the store was unavailable", err)
	}
	if s := res.Record.Steps["collect"]; s == nil || s.Status != StatusRunning {
		t.Fatalf("the step cut short by the store is recorded %+v, want running", s)
	}
	st.down.Store(false)
	res, err = r.engine.Run(ctx, w, RunInput{RunID: "ro"}, nil)
	if err != nil || res.Record.Status != RunCompleted || res.Record.Outputs["joined"] != "A-B" {
		t.Fatalf("resume: %v, status %s (%s)", err, res.Record.Status, res.Record.Error)
	}
}

// refusingExec is the rig's executor behind an admission that refuses the first
// `refuse` tool steps as the host's does when its runs are full.
type refusingExec struct {
	Executor
	refuse  atomic.Int64
	refused atomic.Int64
}

func (x *refusingExec) ToolStep(ctx context.Context, name string, args []byte, session string, timeout time.Duration) (loop.ToolResult, loop.RunResult) {
	if x.refuse.Add(-1) >= 0 {
		x.refused.Add(1)
		err := &loop.OverloadError{Reason: "the host's 1 runs and queue of 0 are full", RetryAfter: time.Second}
		return loop.ErrorResult(err.Error()), loop.RunResult{SessionID: session, Status: loop.StatusFailed, Reason: loop.ReasonError, Err: err}
	}
	return x.Executor.ToolStep(ctx, name, args, session, timeout)
}

// A step the host's admission refuses (loop.ErrOverloaded) did not start: it waits as
// the refusal asks and calls again, without spending one of its attempts, and the run
// completes. It used to fail the step, and the run with it, for the host being busy.
func TestEngine_AStepRefusedByAdmissionWaitsAndRunsInsteadOfFailing(t *testing.T) {
	r := newRig(t, loop.ToolPolicy{})
	x := &refusingExec{Executor: r.engine.Exec}
	x.refuse.Store(1)
	r.engine.Exec = x
	res, err := r.engine.Run(context.Background(), pipeline(t, 2), RunInput{RunID: "ra", Inputs: json.RawMessage(`{"text":"a b"}`)}, nil)
	if err != nil || res.Record.Status != RunCompleted || res.Record.Outputs["joined"] != "A-B" {
		t.Fatalf("%v: status %s (%s), outputs %v", err, res.Record.Status, res.Record.Error, res.Record.Outputs)
	}
	if x.refused.Load() != 1 || r.count("split") != 1 || res.Record.Steps["collect"].Attempts != 1 {
		t.Fatalf("refused %d, split ran %d times, %d attempts recorded (a refusal is not an attempt)", x.refused.Load(), r.count("split"), res.Record.Steps["collect"].Attempts)
	}
}
