package workflow

import (
	"context"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// gated is a run of two tool steps: u (the rig's "upper", which waits for r.gate), then j.
func gated(t *testing.T) *Workflow {
	t.Helper()
	w, err := Compile("gated", Definition{Steps: []Step{
		{ID: "u", Tool: "upper", Arguments: map[string]any{"word": "a"}},
		{ID: "j", Tool: "join", Arguments: map[string]any{"words": []any{"${steps.u.output}", "b"}}, Output: "out"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// A tool step's start is its call's open run, not a row: while the call runs, the record
// read shows the step running (from the call's first write on) and no row of the step is
// stored; once it ends, its row is stored with the call's end.
func TestL21_AToolStepIsRunningFromItsCallsFirstWriteWithNoStartRow(t *testing.T) {
	st := &kvRunStore{MemoryStore: loop.NewMemoryStore()}
	r := newRigOn(t, loop.ToolPolicy{}, func(*loop.MemoryStore) loop.SessionStore { return st })
	r.gate = make(chan struct{})
	ctx := context.Background()
	done := make(chan Result, 1)
	go func() {
		res, err := r.engine.Run(ctx, gated(t), RunInput{RunID: "g1"}, nil)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	deadline := time.Now().Add(10 * time.Second)
	for r.count("upper") == 0 { // the call's first write is stored before the tool runs
		if time.Now().After(deadline) {
			t.Fatal("the step's call never started")
		}
		time.Sleep(2 * time.Millisecond) // polling, bounded by the deadline
	}
	rec, ok, err := LoadRecord(ctx, st, "gated", "g1")
	if err != nil || !ok || rec.Status != RunRunning {
		t.Fatalf("record while u runs: %+v ok=%v %v", rec, ok, err)
	}
	if u := rec.Steps["u"]; u == nil || u.Status != StatusRunning || u.Started.IsZero() || rec.Steps["j"] != nil {
		t.Fatalf("steps while u runs: u=%+v j=%+v, want u running and j not started", u, rec.Steps["j"])
	}
	if _, stored, _ := st.KVGet(ctx, StepsNamespace, rowsAt("gated/g1", rec.Started)+"u"); stored {
		t.Fatal("u's start was stored as a row")
	}
	for i, kv := range st.batches {
		if len(kv) != 0 {
			t.Fatalf("u's call's first write (write %d) carried %+v", i, kv)
		}
	}
	r.gate <- struct{}{}
	res := <-done
	if res.Record.Status != RunCompleted || res.Record.Outputs["out"] != "A-b" {
		t.Fatalf("%+v", res.Record)
	}
	rec, _, err = LoadRecord(ctx, st, "gated", "g1")
	if err != nil || rec.Steps["u"].Status != StatusOK || rec.Steps["u"].Output != "A" || rec.Steps["j"].Status != StatusOK {
		t.Fatalf("stored at the end: %+v %v", rec, err)
	}
}

// A process killed right after a step's call's first write (which carries no row of the
// step now) leaves the record as a stored start did: the run running, the step shown
// running (its call's open run). The resume makes that call again, as it did after a
// stored start (the call's end was not stored), and every other call once.
func TestL21_AKillRightAfterACallsFirstWriteLosesNothingAndRepeatsOnlyThatCall(t *testing.T) {
	st := &kvRunStore{MemoryStore: loop.NewMemoryStore(), cut: 3} // b's call's first write is the 3rd
	r := newRigOn(t, loop.ToolPolicy{}, func(*loop.MemoryStore) loop.SessionStore { return st })
	ctx := context.Background()
	res, _ := r.engine.Run(ctx, chain(t), RunInput{RunID: "k1"}, nil)
	if res.Record == nil || res.Record.Status == RunCompleted || r.count("join") != 2 {
		t.Fatalf("the run went on past the kill: %+v, join called %d times", res.Record, r.count("join"))
	}
	rec, ok, err := LoadRecord(ctx, st.MemoryStore, "chain", "k1")
	if err != nil || !ok || rec.Status != RunRunning {
		t.Fatalf("stored at the kill: %+v ok=%v %v", rec, ok, err)
	}
	if a, b := rec.Steps["a"], rec.Steps["b"]; a == nil || a.Status != StatusOK || a.Output != "a" || b == nil || b.Status != StatusRunning || rec.Steps["c"] != nil {
		t.Fatalf("steps at the kill: a=%+v b=%+v c=%+v, want a ok, b running, c not started", a, b, rec.Steps["c"])
	}
	// A new process on what was stored.
	st2 := &kvRunStore{MemoryStore: st.MemoryStore}
	r2 := newRigOn(t, loop.ToolPolicy{}, func(*loop.MemoryStore) loop.SessionStore { return st2 })
	res, err = r2.engine.Run(ctx, chain(t), RunInput{RunID: "k1"}, nil)
	if err != nil || res.Record.Status != RunCompleted || res.Record.Outputs["out"] != "a-b-c" {
		t.Fatalf("resume: %v %+v", err, res.Record)
	}
	if r2.count("join") != 2 {
		t.Fatalf("the resume called join %d times, want 2 (b, whose end was not stored, and c)", r2.count("join"))
	}
	rec, _, err = LoadRecord(ctx, st.MemoryStore, "chain", "k1")
	if err != nil || rec.Status != RunCompleted || rec.Steps["b"].Status != StatusOK || rec.Steps["b"].Output != "a-b" {
		t.Fatalf("stored after the resume: %+v %v", rec, err)
	}
}
