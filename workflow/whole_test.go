package workflow

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// noterStore is kvRunStore keeping each run's note (loop.RunNoter), as SQLite does:
// a tool step's end waits in its call's run for the run's next write of its own.
type noterStore struct{ *kvRunStore }

func (noterStore) KeepsRunNotes() {}

// chainOf is n "join" steps, each on the one before; the last's output is "out".
func chainOf(t *testing.T, name string, n int) *Workflow {
	t.Helper()
	steps := make([]Step, n)
	for i := range steps {
		steps[i] = Step{ID: fmt.Sprintf("s%d", i), Tool: "join", Arguments: map[string]any{"words": []any{fmt.Sprint(i)}}}
		if i > 0 {
			steps[i].DependsOn = []string{steps[i-1].ID}
		}
	}
	steps[n-1].Output = "out"
	w, err := Compile(name, Definition{Steps: steps})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// A run whose steps' ends all waited in their calls' notes ends with its record in one
// row: the head's, holding the steps, no step row; past ~1 KB compressed (SQLite keeps
// more on overflow pages, a page each), under it the JSON as it is. It reads back as
// the run's record, lists as its summary, and a resume of the ended run writes nothing
// but the same row: it stays whole.
func TestARunThatStoredNoStepRowEndsWithItsRecordWholeInOneRow(t *testing.T) {
	for _, tc := range []struct {
		steps      int
		compressed bool
	}{{3, false}, {8, true}} {
		t.Run(fmt.Sprint(tc.steps), func(t *testing.T) {
			st := noterStore{&kvRunStore{MemoryStore: loop.NewMemoryStore()}}
			r := newRigOn(t, loop.ToolPolicy{}, func(*loop.MemoryStore) loop.SessionStore { return st })
			w := chainOf(t, "whole", tc.steps)
			ctx := context.Background()
			res, err := r.engine.Run(ctx, w, RunInput{RunID: "w1"}, nil)
			if err != nil || res.Record.Status != RunCompleted {
				t.Fatalf("%v %+v", err, res.Record)
			}
			for id := range res.Record.Steps {
				if _, ok, _ := st.KVGet(ctx, StepsNamespace, rowsAt("whole/w1", res.Record.Started)+id); ok {
					t.Fatalf("step %s has a row of its own", id)
				}
			}
			v, ok, err := st.KVGet(ctx, KVNamespace, "whole/w1")
			if err != nil || !ok {
				t.Fatalf("no head: %v", err)
			}
			if got := v[0] == wholeDeflated; got != tc.compressed || len(v) > 1000 {
				t.Fatalf("the head is %d bytes, compressed: %v, want %v, under 1000", len(v), got, tc.compressed)
			}
			b, err := headBytes(v)
			want, _ := json.Marshal(&storedHead{Record: *res.Record})
			if err != nil || !bytes.Equal(b, want) {
				t.Fatalf("the head holds %s (%v)\nwant json.Marshal's %s", b, err, want)
			}
			storedWholeIs(t, st, res.Record)
			runs, err := ListRuns(ctx, st, "whole", 0)
			if err != nil || len(runs) != 1 || runs[0].Status != RunCompleted || runs[0].RunID != "w1" {
				t.Fatalf("listed %+v (%v)", runs, err)
			}
			// Resumed, an ended run calls nothing and stores the same row.
			if res, err := r.engine.Run(ctx, w, RunInput{RunID: "w1"}, nil); err != nil || res.Record.Status != RunCompleted || r.count("join") != int64(tc.steps) {
				t.Fatalf("resume: %v %+v, %d calls", err, res.Record, r.count("join"))
			}
			if again, _, _ := st.KVGet(ctx, KVNamespace, "whole/w1"); !bytes.Equal(again, v) {
				t.Fatalf("the resume stored the record again, other bytes")
			}
			storedWholeIs(t, st, res.Record)
		})
	}
}

// storedWholeIs checks that the stored record of want's run reads back as want.
func storedWholeIs(t *testing.T, st loop.SessionStore, want *Record) {
	t.Helper()
	got, ok, err := LoadRecord(context.Background(), st, want.Workflow, want.RunID)
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if err != nil || !ok || !bytes.Equal(g, w) {
		t.Fatalf("read back %s (%v)\nthe run's record %s", g, err, w)
	}
}

// A record stored whole that a resume goes on with (here: aborted after its first step,
// compressed) gives the resume its ended steps, which are not called again, and moves
// to rows at the run's next write, on a store that keeps no notes (each step's end a
// row of its own).
func TestAResumedRunStoredWholeKeepsItsEndedStepsAndGoesOnWithRows(t *testing.T) {
	st := &kvRunStore{MemoryStore: loop.NewMemoryStore()}
	r := newRigOn(t, loop.ToolPolicy{}, func(*loop.MemoryStore) loop.SessionStore { return st })
	w := chainOf(t, "whole", 3)
	ctx := context.Background()
	rec, err := w.newRecord(RunInput{RunID: "a1"})
	if err != nil {
		t.Fatal(err)
	}
	rec.Status, rec.Error, rec.Ended = RunAborted, "context canceled", rec.Started
	long := strings.Repeat("a long output ", 100) // past wholeCompressAt
	rec.Steps["s0"] = &StepRecord{Status: StatusOK, Started: rec.Started, Ended: rec.Started, Attempts: 1, Output: long}
	v, err := wholeValue(rec)
	if err != nil || v[0] != wholeDeflated {
		t.Fatalf("%v %q", err, v[:1])
	}
	if err := st.KVSet(ctx, KVNamespace, "whole/a1", v); err != nil {
		t.Fatal(err)
	}
	res, err := r.engine.Run(ctx, w, RunInput{RunID: "a1"}, nil)
	if err != nil || res.Record.Status != RunCompleted || r.count("join") != 2 || res.Record.Steps["s0"].Output != long {
		t.Fatalf("%v %+v, %d calls", err, res.Record, r.count("join"))
	}
	for _, id := range []string{"s0", "s1", "s2"} {
		if _, ok, _ := st.KVGet(ctx, StepsNamespace, rowsAt("whole/a1", rec.Started)+id); !ok {
			t.Fatalf("step %s has no row", id)
		}
	}
	storedIsMarshal(t, st, "whole", "a1", res.Record)
}

// A compressed record that does not inflate, or inflates past 64 MiB, fails its load
// with an error naming the run; it is never read as a record with fewer steps.
func TestACompressedRecordThatDoesNotInflateIsAnErrorNamingTheRun(t *testing.T) {
	var bomb bytes.Buffer
	bomb.WriteByte(wholeDeflated)
	zw, _ := flate.NewWriter(&bomb, flate.BestSpeed)
	zeros := make([]byte, 1<<20)
	for range maxWholeBytes>>20 + 1 {
		zw.Write(zeros)
	}
	zw.Close()
	for _, tc := range []struct {
		name  string
		value []byte
		want  string
	}{
		{"not DEFLATE", []byte{wholeDeflated, 0xff, 0xff, 0x00}, "workflow chain run x1: stored record is not readable: compressed record: flate: corrupt input before offset 1"},
		{"cut short", v8(t)[:40], "workflow chain run x1: stored record is not readable: compressed record: unexpected EOF"},
		{"over 64 MiB", bomb.Bytes(), "workflow chain run x1: stored record is not readable: compressed record: more than 64 MiB once uncompressed"},
	} {
		st := loop.NewMemoryStore()
		if err := st.KVSet(context.Background(), KVNamespace, "chain/x1", tc.value); err != nil {
			t.Fatal(err)
		}
		if _, _, err := LoadRecord(context.Background(), st, "chain", "x1"); err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
}

// v8 is the compressed whole record of an ended run of 8 steps.
func v8(t *testing.T) []byte {
	t.Helper()
	w := chainOf(t, "chain", 8)
	rec, err := w.newRecord(RunInput{RunID: "x1"})
	if err != nil {
		t.Fatal(err)
	}
	rec.Status, rec.Ended = RunCompleted, rec.Started
	for _, id := range w.stepIDs() {
		rec.Steps[id] = &StepRecord{Status: StatusOK, Started: rec.Started, Ended: rec.Started, Attempts: 1, Output: id + "-output"}
	}
	v, err := wholeValue(rec)
	if err != nil || v[0] != wholeDeflated {
		t.Fatalf("%v %q", err, v[:1])
	}
	return v
}
