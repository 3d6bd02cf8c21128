package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/storetest"
	"github.com/agenthost/agenthost/workflow"
)

// chain3 is a workflow of three tool steps, each on the one before: out is "a-b-c".
func chain3(t *testing.T) *workflow.Workflow {
	t.Helper()
	w, err := workflow.Compile("chain", workflow.Definition{Steps: []workflow.Step{
		{ID: "a", Tool: "join", Arguments: map[string]any{"words": []any{"a"}}},
		{ID: "b", Tool: "join", Arguments: map[string]any{"words": []any{"${steps.a.output}", "b"}}},
		{ID: "c", Tool: "join", Arguments: map[string]any{"words": []any{"${steps.b.output}", "c"}}, Output: "out"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// A workflow run's lease rides on its record's first and last writes, and they on its
// calls': a run of three tool steps is its calls' two commits a step, the first call's
// first write carrying the run's lease and new record (workflow/ridestart.go) and the
// last call's end the final record and the lease's release: six in all; it was ten, then
// eight, then seven (the lease and the new record a commit of their own).
func TestL21_AWorkflowRunsLeaseRidesOnItsRecordsFirstAndLastWrites(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	var calls atomic.Int64
	e := &workflow.Engine{Store: s, Exec: workflow.AgentExecutor{Agent: storetest.JoinAgent(t, s, &calls)}}
	before := s.w.commits.Load()
	res, err := e.Run(ctx, chain3(t), workflow.RunInput{RunID: "r1"}, nil)
	if err != nil || res.Record.Status != workflow.RunCompleted || res.Record.Outputs["out"] != "a-b-c" {
		t.Fatalf("%v %+v", err, res.Record)
	}
	if got := s.w.commits.Load() - before; got != 6 {
		t.Fatalf("a workflow run of 3 tool steps committed %d times, want 6 (its calls' 2 a step)", got)
	}
	if _, held, err := s.Lease(ctx, workflow.RunSession("chain", "", "r1")); err != nil || held {
		t.Fatalf("the run's lease was not given back with its final record: held=%v %v", held, err)
	}
	if _, ok, _ := s.KVGet(ctx, leaseDropNamespace, workflow.RunSession("chain", "", "r1")); ok {
		t.Fatal("the lease's release was stored as a key-value pair")
	}
	rec, ok, err := workflow.LoadRecord(ctx, s, "chain", "r1")
	if err != nil || !ok || rec.Status != workflow.RunCompleted || rec.Outputs["out"] != "a-b-c" || calls.Load() != 3 {
		t.Fatalf("stored %+v (%v), %d calls", rec, err, calls.Load())
	}
	// Every step's end waited in its call's note: the record is stored whole, one row.
	if keys, err := s.KVKeys(ctx, workflow.StepsNamespace, "", 10); err != nil || len(keys) != 0 {
		t.Fatalf("step rows %q (%v), want none: the record whole in its head's row", keys, err)
	}
	// Resumed, a completed run writes nothing but its lease and its release.
	before = s.w.commits.Load()
	if res, err := e.Run(ctx, chain3(t), workflow.RunInput{RunID: "r1"}, nil); err != nil || res.Record.Status != workflow.RunCompleted || calls.Load() != 3 {
		t.Fatalf("resume of a completed run: %v %+v, %d calls", err, res.Record, calls.Load())
	}
	if got := s.w.commits.Load() - before; got != 2 {
		t.Fatalf("the resume of a completed run committed %d times, want 2", got)
	}
}

// AcquireLeaseKV takes the lease and writes the value only if the key has none; a
// session another live process holds is refused with nothing written. ReleaseLeaseKV
// stores its value even when the lease was taken by another (ErrLeaseLost).
func TestLeaseKV_TheValueLandsWithTheLeaseOrNotAtAll(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	alive := func(l loop.Lease) bool { return l.Alive(time.Now()) }
	other := loop.Lease{SessionID: "s1", RunID: "x", PID: 1, Host: "elsewhere", Instance: "i2", Heartbeat: time.Now().UTC()}
	if _, err := s.AcquireLease(ctx, other, alive); err != nil {
		t.Fatal(err)
	}
	mine := loop.Lease{SessionID: "s1", RunID: "y", PID: 2, Host: "elsewhere", Instance: "i1", Heartbeat: time.Now().UTC()}
	kv := func(v string) loop.KVWrite { return loop.KVWrite{Namespace: "ns", Key: "k", Value: []byte(v)} }
	held, created, err := s.AcquireLeaseKV(ctx, mine, alive, kv("first"))
	if !errors.Is(err, loop.ErrSessionBusy) || created || !held.Same(other) {
		t.Fatalf("a held session: %v created=%v held=%+v", err, created, held)
	}
	if _, ok, _ := s.KVGet(ctx, "ns", "k"); ok {
		t.Fatal("a refused lease wrote its value")
	}
	if err := s.ReleaseLease(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, created, err := s.AcquireLeaseKV(ctx, mine, alive, kv("first")); err != nil || !created {
		t.Fatalf("free session: %v created=%v", err, created)
	}
	if l, held, err := s.Lease(ctx, "s1"); err != nil || !held || !l.Same(mine) {
		t.Fatalf("lease %+v held=%v %v", l, held, err)
	}
	if _, created, err := s.AcquireLeaseKV(ctx, mine, alive, kv("second")); err != nil || created {
		t.Fatalf("a key that has a value: %v created=%v", err, created)
	}
	if v, _, _ := s.KVGet(ctx, "ns", "k"); string(v) != "first" {
		t.Fatalf("the value was overwritten: %q", v)
	}
	if err := s.ReleaseLeaseKV(ctx, mine, kv("last")); err != nil {
		t.Fatal(err)
	}
	if _, held, _ := s.Lease(ctx, "s1"); held {
		t.Fatal("the lease was not given back")
	}
	if err := s.ReleaseLeaseKV(ctx, mine, kv("after")); !errors.Is(err, loop.ErrLeaseLost) {
		t.Fatalf("release of a lease not held: %v", err)
	}
	if v, _, _ := s.KVGet(ctx, "ns", "k"); string(v) != "after" {
		t.Fatalf("the value with a lost lease was not stored: %q", v)
	}
}

// dyingSQLite is the SQLite store of a process killed at a chosen write: from then on
// every write fails, as nothing more reaches the file.
type dyingSQLite struct {
	*SQLite
	mu   sync.Mutex
	dead bool
	// kill is asked before each write (its kind); true kills the process before it.
	kill func(kind string) bool
	// after is asked after each write that landed; true kills the process after it.
	after func(kind string) bool
}

var errKilled = errors.New("the process is gone")

func (d *dyingSQLite) do(kind string, f func() error) error {
	d.mu.Lock()
	if !d.dead && d.kill != nil && d.kill(kind) {
		d.dead = true
	}
	dead := d.dead
	d.mu.Unlock()
	if dead {
		return errKilled
	}
	err := f()
	d.mu.Lock()
	if err == nil && d.after != nil && d.after(kind) {
		d.dead = true
	}
	d.mu.Unlock()
	return err
}

func (d *dyingSQLite) Append(ctx context.Context, id string, es ...loop.Entry) error {
	return d.do("append", func() error { return d.SQLite.Append(ctx, id, es...) })
}
func (d *dyingSQLite) SaveRun(ctx context.Context, r loop.RunRecord) error {
	return d.do("saverun", func() error { return d.SQLite.SaveRun(ctx, r) })
}
func (d *dyingSQLite) AppendRun(ctx context.Context, r loop.RunRecord, es ...loop.Entry) error {
	return d.do("appendrun", func() error { return d.SQLite.AppendRun(ctx, r, es...) })
}
func (d *dyingSQLite) AppendRunKV(ctx context.Context, r loop.RunRecord, kv []loop.KVWrite, es ...loop.Entry) error {
	return d.do("appendrunkv", func() error { return d.SQLite.AppendRunKV(ctx, r, kv, es...) })
}
func (d *dyingSQLite) AppendRunClaim(ctx context.Context, l loop.Lease, alive func(loop.Lease) bool, r loop.RunRecord, kv []loop.KVWrite, es ...loop.Entry) error {
	return d.do("appendrunclaim", func() error { return d.SQLite.AppendRunClaim(ctx, l, alive, r, kv, es...) })
}
func (d *dyingSQLite) KVSet(ctx context.Context, ns, key string, v []byte) error {
	return d.do("kvset", func() error { return d.SQLite.KVSet(ctx, ns, key, v) })
}
func (d *dyingSQLite) KVSetAll(ctx context.Context, kv []loop.KVWrite) error {
	return d.do("kvsetall", func() error { return d.SQLite.KVSetAll(ctx, kv) })
}
func (d *dyingSQLite) AcquireLease(ctx context.Context, l loop.Lease, alive func(loop.Lease) bool) (held loop.Lease, err error) {
	err = d.do("acquire", func() (err error) { held, err = d.SQLite.AcquireLease(ctx, l, alive); return err })
	return held, err
}
func (d *dyingSQLite) RenewLease(ctx context.Context, l loop.Lease) error {
	return d.do("renew", func() error { return d.SQLite.RenewLease(ctx, l) })
}
func (d *dyingSQLite) ReleaseLease(ctx context.Context, l loop.Lease) error {
	return d.do("release", func() error { return d.SQLite.ReleaseLease(ctx, l) })
}
func (d *dyingSQLite) AcquireLeaseKV(ctx context.Context, l loop.Lease, alive func(loop.Lease) bool, kv loop.KVWrite) (held loop.Lease, created bool, err error) {
	err = d.do("acquirekv", func() (err error) { held, created, err = d.SQLite.AcquireLeaseKV(ctx, l, alive, kv); return err })
	return held, created, err
}
func (d *dyingSQLite) ReleaseLeaseKV(ctx context.Context, l loop.Lease, kv ...loop.KVWrite) error {
	return d.do("releasekv", func() error { return d.SQLite.ReleaseLeaseKV(ctx, l, kv...) })
}

// A process killed right after the write that took a run's lease with its new record (its
// first call's first write) loses nothing: a new process resumes the run from what is
// stored (its inputs included), makes that call again (its end was not stored, as for
// any call) and no other twice, and completes it. Killed right before
// the last step's call's end (which carries the step's end, the final record and the
// release), the call's result is not stored, so the resume makes that call again (at
// least once, as for any call whose end was not stored) and no other; killed right after
// it, the run is stored completed, its lease given back, and a resume calls nothing.
func TestL21_AKillAtAWorkflowRunsFoldedWritesLosesNothingAndRepeatsNoCall(t *testing.T) {
	ends := func(n int) func(string) bool { // the n-th call end (AppendRunKV)
		var seen int
		return func(k string) bool {
			if k == "appendrunkv" {
				seen++
			}
			return k == "appendrunkv" && seen == n
		}
	}
	for _, tc := range []struct {
		name        string
		kill, after func(kind string) bool
		calls       int64             // tool calls before the kill
		stored      string            // the run's status stored at the kill
		total       int64             // tool calls in all, with the resume's
		steps       map[string]string // the steps' statuses at the kill, a running run's
	}{
		{"after the first call's first write with the lease and the new record", nil, func(k string) bool { return k == "appendrunclaim" }, 1, workflow.RunRunning, 4, map[string]string{"a": workflow.StatusRunning}},
		{"after the first call's end, the step's end in its run row", nil, ends(1), 1, workflow.RunRunning, 3, map[string]string{"a": workflow.StatusOK}},
		{"after the second call's end", nil, ends(2), 2, workflow.RunRunning, 3, map[string]string{"a": workflow.StatusOK, "b": workflow.StatusOK}},
		{"before the last call's end with the final record and the release", ends(3), nil, 3, workflow.RunRunning, 4, map[string]string{"a": workflow.StatusOK, "b": workflow.StatusOK, "c": workflow.StatusRunning}},
		{"after the last call's end with the final record and the release", nil, ends(3), 3, workflow.RunCompleted, 3, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			ctx := context.Background()
			var calls atomic.Int64
			d := &dyingSQLite{SQLite: s, kill: tc.kill, after: tc.after}
			e := &workflow.Engine{Store: d, Exec: workflow.AgentExecutor{Agent: storetest.JoinAgent(t, d, &calls)}}
			res, err := e.Run(ctx, chain3(t), workflow.RunInput{RunID: "k1", Inputs: json.RawMessage(`{"n":1}`)}, nil)
			if completed := tc.stored == workflow.RunCompleted; completed != (err == nil) || (err != nil && !errors.Is(err, errKilled)) || calls.Load() != tc.calls {
				t.Fatalf("the killed run: %v %+v, %d calls", err, res.Record, calls.Load())
			}
			rec, ok, err := workflow.LoadRecord(ctx, s, "chain", "k1")
			if err != nil || !ok || rec.Status != tc.stored || string(rec.Inputs) != `{"n":1}` {
				t.Fatalf("stored at the kill: %+v ok=%v %v", rec, ok, err)
			}
			if _, held, _ := s.Lease(ctx, workflow.RunSession("chain", "", "k1")); held != (tc.stored == workflow.RunRunning) {
				t.Fatalf("the killed process's lease in the file: %v", held)
			}
			// Each call that ended shows its step ended ok with its output, read from the
			// call's run row, and a call cut off its step running: no step has a row of its
			// own yet (notes.go).
			if tc.stored == workflow.RunRunning {
				outs := map[string]any{"a": "a", "b": "a-b"}
				for id, status := range tc.steps {
					if r := rec.Steps[id]; r == nil || r.Status != status || (status == workflow.StatusOK && r.Output != outs[id]) {
						t.Fatalf("step %s at the kill: %+v, want %s", id, r, status)
					}
				}
				if len(rec.Steps) != len(tc.steps) {
					t.Fatalf("steps at the kill: %+v, want %v", rec.Steps, tc.steps)
				}
				if keys, err := s.KVKeys(ctx, workflow.StepsNamespace, "", 10); err != nil || len(keys) != 0 {
					t.Fatalf("step rows at the kill: %v %v", keys, err)
				}
			}
			// A new process on the same file; the dead one's lease is taken over.
			var calls2 atomic.Int64
			e2 := &workflow.Engine{Store: s, Exec: workflow.AgentExecutor{Agent: storetest.JoinAgent(t, s, &calls2)}}
			res, err = e2.Run(ctx, chain3(t), workflow.RunInput{RunID: "k1"}, nil)
			if err != nil || res.Record.Status != workflow.RunCompleted || res.Record.Outputs["out"] != "a-b-c" {
				t.Fatalf("resume: %v %+v", err, res.Record)
			}
			if got := calls.Load() + calls2.Load(); got != tc.total {
				t.Fatalf("join called %d times in all, want %d", got, tc.total)
			}
			if _, held, _ := s.Lease(ctx, workflow.RunSession("chain", "", "k1")); held {
				t.Fatal("the resumed run did not give its lease back")
			}
		})
	}
}

// The final record rides on the last call only when that call ends the run: a run
// whose last two steps run side by side, or whose last step fails, stores its final
// record and gives the lease back in a commit of its own, as before, and what it
// stores is the same.
func TestL21_AWorkflowRunsLastWriteRidesOnACallOnlyWhenThatCallEndsTheRun(t *testing.T) {
	for _, tc := range []struct {
		name   string
		steps  []workflow.Step
		status string
		own    int64 // writes of the run's own
	}{
		{"two last steps side by side", []workflow.Step{
			{ID: "a", Tool: "join", Arguments: map[string]any{"words": []any{"a"}}},
			{ID: "b", Tool: "join", Arguments: map[string]any{"words": []any{"${steps.a.output}", "b"}}},
			{ID: "c", Tool: "join", Arguments: map[string]any{"words": []any{"${steps.a.output}", "c"}}},
		}, workflow.RunCompleted, 1},
		{"a last step that fails", []workflow.Step{
			{ID: "a", Tool: "join", Arguments: map[string]any{"words": []any{"a"}}},
			{ID: "b", Tool: "join", Arguments: map[string]any{"words": "${steps.a.output}"}},
		}, workflow.RunFailed, 2}, // the failed step's end (with the first step's), the final record
		{"a chain", []workflow.Step{
			{ID: "a", Tool: "join", Arguments: map[string]any{"words": []any{"a"}}},
			{ID: "b", Tool: "join", Arguments: map[string]any{"words": []any{"${steps.a.output}", "b"}}},
		}, workflow.RunCompleted, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			ctx := context.Background()
			var calls atomic.Int64
			w, err := workflow.Compile("wf", workflow.Definition{Steps: tc.steps})
			if err != nil {
				t.Fatal(err)
			}
			// The writes by kind: a call's are its runs' (append…), the run's own the rest.
			// (Counted by kind, not by commits: two calls side by side may share a commit.)
			var mu sync.Mutex
			var own []string
			d := &dyingSQLite{SQLite: s, after: func(kind string) bool {
				if !strings.HasPrefix(kind, "append") && kind != "renew" {
					mu.Lock()
					own = append(own, kind)
					mu.Unlock()
				}
				return false
			}}
			e := &workflow.Engine{Store: d, Exec: workflow.AgentExecutor{Agent: storetest.JoinAgent(t, d, &calls)}}
			res, err := e.Run(ctx, w, workflow.RunInput{RunID: "r"}, nil)
			if err != nil || res.Record.Status != tc.status {
				t.Fatalf("%v %+v", err, res.Record)
			}
			mu.Lock()
			got := own
			mu.Unlock()
			if int64(len(got)) != tc.own {
				t.Fatalf("the run wrote %d times on its own (%v), want %d", len(got), got, tc.own)
			}
			if _, held, err := s.Lease(ctx, workflow.RunSession("wf", "", "r")); err != nil || held {
				t.Fatalf("the run's lease was not given back: held=%v %v", held, err)
			}
			rec, ok, err := workflow.LoadRecord(ctx, s, "wf", "r")
			if err != nil || !ok || rec.Status != tc.status || !rec.Ended.Equal(res.Record.Ended) || len(rec.Outputs) != len(res.Record.Outputs) {
				t.Fatalf("stored %+v (%v), returned %+v", rec, err, res.Record)
			}
			for id, r := range res.Record.Steps {
				if got := rec.Steps[id]; got == nil || got.Status != r.Status || !got.Ended.Equal(r.Ended) {
					t.Fatalf("step %s stored %+v, returned %+v", id, got, r)
				}
			}
		})
	}
}

// ReleaseLeaseWrite gives back, in a run write of another session, only the lease it
// names: another owner's lease on that session stays, and the write lands; a release
// write whose value is not a lease of its session fails the whole write, which stores
// nothing; and the release is never stored as a key-value pair.
func TestReleaseLeaseWrite_GivesBackOnlyItsOwnLeaseAndIsNeverAPair(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	alive := func(l loop.Lease) bool { return l.Alive(time.Now()) }
	mine := loop.Lease{SessionID: "wf", RunID: "a", PID: 2, Host: "elsewhere", Instance: "i1", Heartbeat: time.Now().UTC()}
	other := loop.Lease{SessionID: "wf", RunID: "b", PID: 3, Host: "elsewhere", Instance: "i2", Heartbeat: time.Now().UTC()}
	call := func(id string, kv ...loop.KVWrite) error {
		now := time.Now().UTC()
		m := loop.UserMessage("x")
		return s.AppendRunKV(ctx, loop.RunRecord{ID: id, SessionID: "call-" + id, Started: now}, kv,
			loop.Entry{Seq: 1, Kind: loop.EntryMessage, RunID: id, Time: now, Message: &m})
	}
	row := loop.KVWrite{Namespace: "ns", Key: "k", Value: []byte("v")}
	if _, err := s.AcquireLease(ctx, other, alive); err != nil {
		t.Fatal(err)
	}
	if err := call("r1", row, s.ReleaseLeaseWrite(mine)); err != nil {
		t.Fatalf("a release of a lease not held failed the write: %v", err)
	}
	if l, held, _ := s.Lease(ctx, "wf"); !held || !l.Same(other) {
		t.Fatalf("another owner's lease was given back: %+v held=%v", l, held)
	}
	if v, ok, _ := s.KVGet(ctx, "ns", "k"); !ok || string(v) != "v" {
		t.Fatalf("the write's pair: %q %v", v, ok)
	}
	bad := loop.KVWrite{Namespace: leaseDropNamespace, Key: "wf", Value: []byte(`{"session_id":"elsewhere"}`)}
	if err := call("r2", loop.KVWrite{Namespace: "ns", Key: "k2", Value: []byte("v")}, bad); err == nil {
		t.Fatal("a release naming another session was taken")
	}
	if _, ok, _ := s.KVGet(ctx, "ns", "k2"); ok {
		t.Fatal("a refused write stored its pair")
	}
	if runs, _ := s.Runs(ctx, "call-r2"); len(runs) != 0 {
		t.Fatalf("a refused write stored its run: %+v", runs)
	}
	if err := s.ReleaseLease(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquireLease(ctx, mine, alive); err != nil {
		t.Fatal(err)
	}
	if err := call("r3", s.ReleaseLeaseWrite(mine)); err != nil {
		t.Fatal(err)
	}
	if _, held, _ := s.Lease(ctx, "wf"); held {
		t.Fatal("the lease named was not given back")
	}
	if _, ok, _ := s.KVGet(ctx, leaseDropNamespace, "wf"); ok {
		t.Fatal("a release was stored as a key-value pair")
	}
}
