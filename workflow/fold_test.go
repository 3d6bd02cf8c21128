package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// kvRunStore is a MemoryStore that is a loop.KVRunAppender, as the SQLite store is: it
// records every write, and from the write after the cut-th AppendRunKV on, it refuses
// every write, like a process killed right after that commit.
type kvRunStore struct {
	*loop.MemoryStore
	mu      sync.Mutex
	writes  []string         // "kvset" or "run+kv:STATUS-OF-RECORD:STEP=STATUS" in order
	batches [][]loop.KVWrite // the kv of each AppendRunKV
	appends int
	cut     int // 0: never
	dead    bool
}

var errKilled = errors.New("the process is gone")

func (s *kvRunStore) down() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dead
}

func (s *kvRunStore) Append(ctx context.Context, id string, es ...loop.Entry) error {
	if s.down() {
		return errKilled
	}
	return s.MemoryStore.Append(ctx, id, es...)
}

func (s *kvRunStore) SaveRun(ctx context.Context, r loop.RunRecord) error {
	if s.down() {
		return errKilled
	}
	return s.MemoryStore.SaveRun(ctx, r)
}

func (s *kvRunStore) KVSet(ctx context.Context, ns, key string, v []byte) error {
	if s.down() {
		return errKilled
	}
	s.mu.Lock()
	s.writes = append(s.writes, "kvset")
	s.mu.Unlock()
	return s.MemoryStore.KVSet(ctx, ns, key, v)
}

func (s *kvRunStore) AppendRunKV(ctx context.Context, r loop.RunRecord, kv []loop.KVWrite, es ...loop.Entry) error {
	if s.down() {
		return errKilled
	}
	if err := s.MemoryStore.SaveRun(ctx, r); err != nil {
		return err
	}
	if err := s.MemoryStore.Append(ctx, r.SessionID, es...); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, kv)
	for _, w := range kv {
		if err := s.MemoryStore.KVSet(ctx, w.Namespace, w.Key, w.Value); err != nil {
			return err
		}
		var st StepRecord
		id := w.Key[strings.LastIndexByte(w.Key, '/')+1:]
		if w.Namespace == StepsNamespace && json.Unmarshal(w.Value, &st) == nil && strings.HasSuffix(r.SessionID, "~"+id) {
			s.writes = append(s.writes, "run+kv:"+string(r.Status)+":"+id+"="+st.Status)
		}
	}
	s.appends++
	if s.appends == s.cut {
		s.dead = true
	}
	return nil
}

func chain(t *testing.T) *Workflow {
	t.Helper()
	w, err := Compile("chain", Definition{Steps: []Step{
		{ID: "a", Tool: "join", Arguments: map[string]any{"words": []any{"a"}}},
		{ID: "b", Tool: "join", Arguments: map[string]any{"words": []any{"${steps.a.output}", "b"}}},
		{ID: "c", Tool: "join", Arguments: map[string]any{"words": []any{"${steps.b.output}", "c"}}, Output: "out"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// A tool step's end is stored with its call's end (run_finished), in the same
// transaction, and its start is not stored (its call's open run is: notes.go): the
// engine writes the run's record on its own only when the run opens and when it ends.
func TestEngine_AToolStepsRecordIsStoredInItsCallsTransactions(t *testing.T) {
	st := &kvRunStore{MemoryStore: loop.NewMemoryStore()}
	r := newRigOn(t, loop.ToolPolicy{}, func(*loop.MemoryStore) loop.SessionStore { return st })
	res, err := r.engine.Run(context.Background(), chain(t), RunInput{RunID: "f1"}, nil)
	if err != nil || res.Record.Status != RunCompleted || res.Record.Outputs["out"] != "a-b-c" {
		t.Fatalf("%v %+v", err, res.Record)
	}
	want := []string{"kvset", // the run opens
		"run+kv:completed:a=ok",
		"run+kv:completed:b=ok",
		"run+kv:completed:c=ok",
		"kvset"} // the run ends
	if got := st.writes; len(got) != len(want) {
		t.Fatalf("writes %q, want %q", got, want)
	}
	for i := range want {
		if st.writes[i] != want[i] {
			t.Fatalf("writes %q, want %q", st.writes, want)
		}
	}
	for i, kv := range st.batches {
		if i%2 == 0 && len(kv) != 0 {
			t.Fatalf("call write %d (a call's first) carried %+v, want nothing", i, kv)
		}
	}
}

// A process killed right after a step's call stored its end does not make that call
// again on resume: the step's end was stored with it. (Written after the call, as it
// was, the step's end was lost with the process and the resume called the tool again.)
func TestEngine_AKillRightAfterAStepsCallDoesNotRepeatTheCallOnResume(t *testing.T) {
	st := &kvRunStore{MemoryStore: loop.NewMemoryStore(), cut: 4} // b's call's end is the 4th
	r := newRigOn(t, loop.ToolPolicy{}, func(*loop.MemoryStore) loop.SessionStore { return st })
	res, _ := r.engine.Run(context.Background(), chain(t), RunInput{RunID: "f2"}, nil)
	if res.Record == nil || res.Record.Status == RunCompleted || r.count("join") != 2 {
		t.Fatalf("the run went on past the kill: %+v, join called %d times", res.Record, r.count("join"))
	}
	rec, ok, err := LoadRecord(context.Background(), st, "chain", "f2")
	if err != nil || !ok || rec.Steps["b"] == nil || rec.Steps["b"].Status != StatusOK || rec.Steps["b"].Output != "a-b" {
		t.Fatalf("stored record %+v (%v)", rec, err)
	}
	// A new process on what was stored.
	st2 := &kvRunStore{MemoryStore: st.MemoryStore}
	r2 := newRigOn(t, loop.ToolPolicy{}, func(*loop.MemoryStore) loop.SessionStore { return st2 })
	res, err = r2.engine.Run(context.Background(), chain(t), RunInput{RunID: "f2"}, nil)
	if err != nil || res.Record.Status != RunCompleted || res.Record.Outputs["out"] != "a-b-c" {
		t.Fatalf("resume: %v %+v", err, res.Record)
	}
	if r2.count("join") != 1 {
		t.Fatalf("the resume called join %d times, want 1 (step c only)", r2.count("join"))
	}
}
