package workflow

import (
	"context"
	"fmt"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// A tool step's call carries its step's row and nothing else, at its end (its first
// write carries nothing: its open run is the step's start, fold.go): the same small write
// at the 1st step as at the 12th, where the record stored whole grew by a step each time
// (O(steps) bytes a write, O(steps²) a run).
func TestAToolStepsCallCarriesOnlyItsStepsRowWhateverTheRunsSize(t *testing.T) {
	st := &kvRunStore{MemoryStore: loop.NewMemoryStore()}
	r := newRigOn(t, loop.ToolPolicy{}, func(*loop.MemoryStore) loop.SessionStore { return st })
	const n = 12
	steps := make([]Step, n)
	for i := range steps {
		steps[i] = Step{ID: fmt.Sprintf("s%02d", i), Tool: "join", Arguments: map[string]any{"words": []any{"w"}}}
		if i > 0 {
			steps[i].DependsOn = []string{steps[i-1].ID}
		}
	}
	w, err := Compile("long", Definition{Steps: steps})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.engine.Run(context.Background(), w, RunInput{RunID: "l1"}, nil)
	if err != nil || res.Record.Status != RunCompleted {
		t.Fatalf("%v %+v", err, res.Record)
	}
	if len(st.batches) != 2*n {
		t.Fatalf("%d writes carried kv, want %d (two a step)", len(st.batches), 2*n)
	}
	for i, kv := range st.batches {
		id := steps[i/2].ID
		if i%2 == 0 {
			if len(kv) != 0 {
				t.Fatalf("the first write of step %s's call carried %+v, want nothing", id, kv)
			}
			continue
		}
		if len(kv) != 1 || kv[0].Namespace != StepsNamespace || kv[0].Key != rowsAt("long/l1", res.Record.Started)+id || len(kv[0].Value) > 160 {
			t.Fatalf("write %d (step %s) carried %d pairs: %+v", i, id, len(kv), kv)
		}
	}
	// The head: written when the run opened and when it ended (KVSet), no more.
	if got := st.writes; got[0] != "kvset" || got[len(got)-1] != "kvset" || len(got) != 2+n {
		t.Fatalf("writes %q", got)
	}
	storedIsMarshal(t, st, "long", "l1", res.Record)
}

// A step row that cannot be read fails the load with a clear error naming the step.
func TestAnUnreadableStepRowIsAnErrorNamingTheStep(t *testing.T) {
	st := loop.NewMemoryStore()
	r := newRigOn(t, loop.ToolPolicy{}, func(*loop.MemoryStore) loop.SessionStore { return st })
	res, err := r.engine.Run(context.Background(), chain(t), RunInput{RunID: "u1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.KVSet(context.Background(), StepsNamespace, rowsAt("chain/u1", res.Record.Started)+"b", []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	_, _, err = LoadRecord(context.Background(), st, "chain", "u1")
	if err == nil || err.Error() != "workflow chain run u1: stored step b is not readable: invalid character 'n' looking for beginning of object key string" {
		t.Fatalf("load: %v", err)
	}
}
