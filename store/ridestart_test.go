package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/storetest"
	"github.com/agenthost/agenthost/workflow"
)

// A new run's lease and record ride on its first call's first write (workflow/ridestart.go):
// a process killed before that write has stored nothing of the run and called nothing;
// a new process runs it as a new run, each call once.
func TestL21_AKillBeforeANewRunsFirstCallsFirstWriteStoresNothingAndCallsNothing(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	var calls atomic.Int64
	d := &dyingSQLite{SQLite: s, kill: func(k string) bool { return k == "appendrunclaim" }}
	e := &workflow.Engine{Store: d, Exec: workflow.AgentExecutor{Agent: storetest.JoinAgent(t, d, &calls)}}
	if _, err := e.Run(ctx, chain3(t), workflow.RunInput{RunID: "n1", Inputs: json.RawMessage(`{"n":1}`)}, nil); !errors.Is(err, errKilled) || calls.Load() != 0 {
		t.Fatalf("the killed run: %v, %d calls", err, calls.Load())
	}
	if rec, ok, err := workflow.LoadRecord(ctx, s, "chain", "n1"); ok || err != nil {
		t.Fatalf("a record was stored: %+v %v", rec, err)
	}
	if l, held, _ := s.Lease(ctx, workflow.RunSession("chain", "", "n1")); held {
		t.Fatalf("the run's lease was stored: %+v", l)
	}
	var calls2 atomic.Int64
	e2 := &workflow.Engine{Store: s, Exec: workflow.AgentExecutor{Agent: storetest.JoinAgent(t, s, &calls2)}}
	res, err := e2.Run(ctx, chain3(t), workflow.RunInput{RunID: "n1", Inputs: json.RawMessage(`{"n":1}`)}, nil)
	if err != nil || res.Record.Status != workflow.RunCompleted || res.Record.Outputs["out"] != "a-b-c" || calls2.Load() != 3 {
		t.Fatalf("the new process: %v %+v, %d calls", err, res.Record, calls2.Load())
	}
}

// A new run whose lease a live process holds when its first call writes is refused in
// that write (loop.ErrSessionBusy), as the lease's own commit refused it: no call is
// made, no record stored, the holder's lease stays (the call's run is recorded aborted). So is one whose record another
// starter created meanwhile, and that record stays as that starter stored it.
func TestL21_ANewRunsStartRiddenOnItsFirstCallIsRefusedWholeWhenTheRunIsTaken(t *testing.T) {
	ctx := context.Background()
	t.Run("a live holder of the run's lease", func(t *testing.T) {
		s := open(t)
		other := loop.Lease{SessionID: workflow.RunSession("chain", "", "b1"), RunID: "other", PID: 1, Host: "another-node", Instance: "i9", Heartbeat: time.Now().UTC()}
		if _, err := s.AcquireLease(ctx, other, func(loop.Lease) bool { return true }); err != nil {
			t.Fatal(err)
		}
		var calls atomic.Int64
		e := &workflow.Engine{Store: s, Exec: workflow.AgentExecutor{Agent: storetest.JoinAgent(t, s, &calls)}}
		before := s.w.commits.Load()
		var evs []workflow.Event
		if _, err := e.Run(ctx, chain3(t), workflow.RunInput{RunID: "b1"}, func(ev workflow.Event) { evs = append(evs, ev) }); !errors.Is(err, loop.ErrSessionBusy) || calls.Load() != 0 {
			t.Fatalf("a run whose lease is held: %v, %d calls", err, calls.Load())
		}
		if len(evs) != 0 { // a surface answers it as a start refused up front (HTTP 409)
			t.Fatalf("the refused start emitted %+v", evs)
		}
		if rec, ok, _ := workflow.LoadRecord(ctx, s, "chain", "b1"); ok {
			t.Fatalf("a record was stored: %+v", rec)
		}
		if l, held, _ := s.Lease(ctx, other.SessionID); !held || !l.Same(other) {
			t.Fatalf("the holder's lease: %+v held=%v", l, held)
		}
		// The call's run, refused at its first write, is recorded ended (aborted), as any
		// run whose first write failed: none is left open to show the step running.
		runs, _ := s.Runs(ctx, workflow.StepSession("chain", "", "b1", "a", -1))
		for _, r := range runs {
			if r.Status == "" || r.Status == loop.StatusCompleted {
				t.Fatalf("the refused call left run %+v (%d commits)", r, s.w.commits.Load()-before)
			}
		}
	})
	t.Run("a record created meanwhile", func(t *testing.T) {
		s := open(t)
		theirs := []byte(`{"workflow":"chain","run_id":"c1","inputs":{},"status":"completed","started":"2026-01-01T00:00:00Z","steps":{}}`)
		var once atomic.Bool
		d := &dyingSQLite{SQLite: s, kill: func(k string) bool {
			if k == "appendrunclaim" && once.CompareAndSwap(false, true) { // another starter, between the read and the write
				if err := s.KVSet(ctx, workflow.KVNamespace, "chain/c1", theirs); err != nil {
					t.Error(err)
				}
			}
			return false
		}}
		var calls atomic.Int64
		e := &workflow.Engine{Store: d, Exec: workflow.AgentExecutor{Agent: storetest.JoinAgent(t, d, &calls)}}
		var evs []workflow.Event
		if _, err := e.Run(ctx, chain3(t), workflow.RunInput{RunID: "c1"}, func(ev workflow.Event) { evs = append(evs, ev) }); !errors.Is(err, loop.ErrSessionBusy) || calls.Load() != 0 {
			t.Fatalf("a run created meanwhile: %v, %d calls", err, calls.Load())
		}
		if len(evs) != 0 {
			t.Fatalf("the refused start emitted %+v", evs)
		}
		// The same start when nobody races it: its held events come out in order once
		// its first call's first write stored it, before that call's tool ran.
		evs = nil
		var atCall []string
		e2 := &workflow.Engine{Store: s, Exec: workflow.AgentExecutor{Agent: storetest.JoinAgent(t, s, &calls)}}
		res, err := e2.Run(ctx, chain3(t), workflow.RunInput{RunID: "c2"}, func(ev workflow.Event) {
			evs = append(evs, ev)
			if ev.Type == workflow.EventStepFinished && len(atCall) == 0 {
				for _, e := range evs {
					atCall = append(atCall, e.Type+":"+e.Step)
				}
			}
		})
		if err != nil || res.Record.Status != workflow.RunCompleted {
			t.Fatalf("an unraced start: %v %+v", err, res.Record)
		}
		if got := strings.Join(atCall, " "); got != "workflow_started: step_started:a step_finished:a" {
			t.Fatalf("events up to the first step's end: %s", got)
		}
		if v, _, _ := s.KVGet(ctx, workflow.KVNamespace, "chain/c1"); string(v) != string(theirs) {
			t.Fatalf("the other starter's record became %s", v)
		}
		if _, held, _ := s.Lease(ctx, workflow.RunSession("chain", "", "c1")); held {
			t.Fatal("the refused run's lease was stored")
		}
	})
}

// KVHas answers from a point read what KVGet answers: a key set is there, one never set
// or in another namespace is not.
func TestKVHasSaysWhatKVGetFinds(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	if err := s.KVSet(ctx, "ns", "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ns, key string
		want    bool
	}{{"ns", "k", true}, {"ns", "other", false}, {"other", "k", false}} {
		if has, err := s.KVHas(ctx, tc.ns, tc.key); err != nil || has != tc.want {
			t.Fatalf("KVHas(%s, %s) = %v, %v; want %v", tc.ns, tc.key, has, err, tc.want)
		}
	}
}

// kvHasCounter is the SQLite store counting its KVHas reads.
type kvHasCounter struct {
	*SQLite
	has atomic.Int64
}

func (c *kvHasCounter) KVHas(ctx context.Context, plugin, key string) (bool, error) {
	c.has.Add(1)
	return c.SQLite.KVHas(ctx, plugin, key)
}

// A run given its id reads whether a record is stored under it before its start rides on
// its first call (the id may be a run to resume); a run whose id the engine made does
// not: nobody else can have stored that run, and a record that were there anyway would
// refuse the ridden start whole at the first call's commit (the test above), never be
// resumed as this run.
func TestANewRunWithAGeneratedIDReadsNothingBeforeItsFirstCall(t *testing.T) {
	s := &kvHasCounter{SQLite: open(t)}
	ctx := context.Background()
	var calls atomic.Int64
	e := &workflow.Engine{Store: s, Exec: workflow.AgentExecutor{Agent: storetest.JoinAgent(t, s, &calls)}}
	res, err := e.Run(ctx, chain3(t), workflow.RunInput{}, nil)
	if err != nil || res.Record.Status != workflow.RunCompleted || s.has.Load() != 0 {
		t.Fatalf("a generated id: %v %+v, %d reads of KVHas", err, res.Record, s.has.Load())
	}
	res, err = e.Run(ctx, chain3(t), workflow.RunInput{RunID: "given"}, nil)
	if err != nil || res.Record.Status != workflow.RunCompleted || s.has.Load() != 1 || calls.Load() != 6 {
		t.Fatalf("a given id: %v %+v, %d reads of KVHas, %d calls", err, res.Record, s.has.Load(), calls.Load())
	}
}
