package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// Every write the engine makes in this package's tests is checked: each step row it
// writes is json.Marshal's bytes of the step's record, and a head it writes decodes to
// the record's fields and names every step of the record; a difference fails the run.
var (
	encodeChecks   atomic.Int64
	encodeMu       sync.Mutex
	encodeMismatch []string
)

func TestMain(m *testing.M) {
	encodeCheck = func(r *Record, kv []loop.KVWrite) {
		encodeChecks.Add(1)
		key := recordKey(r.Workflow, r.Owner, r.RunID)
		if msg := checkWrites(key, rowsAt(key, r.Started), r, kv); msg != "" {
			encodeMu.Lock()
			encodeMismatch = append(encodeMismatch, msg)
			encodeMu.Unlock()
		}
	}
	code := m.Run()
	if len(encodeMismatch) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d stored records differ from json.Marshal's; the first:\n%s\n", len(encodeMismatch), encodeMismatch[0])
		code = 1
	}
	os.Exit(code)
}

// checkWrites says how kv, the writes of r under key with rows at at, differ from r (""
// when they do not).
func checkWrites(key, at string, r *Record, kv []loop.KVWrite) string {
	for _, w := range kv {
		switch id, isRow := strings.CutPrefix(w.Key, at); {
		case w.Namespace == StepsNamespace && isRow:
			if want, err := json.Marshal(r.Steps[id]); err != nil || !bytes.Equal(w.Value, want) {
				return fmt.Sprintf("step %s stored %s\njson.Marshal %s (%v)", id, w.Value, want, err)
			}
		case w.Namespace == KVNamespace && w.Key == key:
			b, err := headBytes(w.Value)
			var h storedHead
			if err == nil && json.Unmarshal(b, &h) == nil && h.RowsAt == "" { // the record stored whole (whole.go)
				want, err := json.Marshal(&storedHead{Record: *r})
				if err != nil || !bytes.Equal(b, want) || r.Status == RunRunning || len(h.StepRows) != 0 {
					return fmt.Sprintf("record stored whole %s\njson.Marshal %s (%v), status %s", b, want, err, r.Status)
				}
				continue
			}
			h = storedHead{}
			if err := json.Unmarshal(w.Value, &h); err != nil || len(h.Steps) != 0 || h.RowsAt != at {
				return fmt.Sprintf("head %s: %v", w.Value, err)
			}
			h.Steps = r.Steps
			got, _ := json.Marshal(&h.Record)
			if want, err := json.Marshal(r); err != nil || !bytes.Equal(got, want) {
				return fmt.Sprintf("head %s\nread with the steps %s\njson.Marshal %s (%v)", w.Value, got, want, err)
			}
			for id := range r.Steps {
				if !slices.Contains(h.StepRows, id) {
					return fmt.Sprintf("head %s does not name step %s", w.Value, id)
				}
			}
		default:
			return fmt.Sprintf("a write of run %s under %s %s", key, w.Namespace, w.Key)
		}
	}
	return ""
}

// storedIsMarshal reads the stored record of run id back (its head and its rows) and
// checks that each row is json.Marshal's of its step, and that the record read back is
// want, the run's result, when set.
func storedIsMarshal(t *testing.T, st loop.SessionStore, workflow, id string, want *Record) *Record {
	t.Helper()
	rec, h, ok, err := loadStored(context.Background(), st, workflow, id, recordKey(workflow, "", id), false)
	if err != nil || !ok || h.RowsAt != rowsAt(recordKey(workflow, "", id), rec.Started) {
		t.Fatalf("no stored record for %s (%+v): %v", id, h, err)
	}
	for sid, sr := range rec.Steps {
		b, ok, err := st.KVGet(context.Background(), StepsNamespace, h.RowsAt+sid)
		if w, _ := json.Marshal(sr); err != nil || !ok || !bytes.Equal(b, w) {
			t.Fatalf("step %s's row %s (%v %v), json.Marshal %s", sid, b, ok, err, w)
		}
	}
	if want != nil {
		got, _ := json.Marshal(rec)
		if w, _ := json.Marshal(want); !bytes.Equal(got, w) {
			t.Fatalf("stored %s\nthe run's record %s", got, w)
		}
	}
	return rec
}

func mismatches() int {
	encodeMu.Lock()
	defer encodeMu.Unlock()
	return len(encodeMismatch)
}

// The record assembled from the steps' kept encodings is byte for byte json.Marshal's
// of the whole record, at every write of a run with a fan-out, retries, a skipped step
// and an approval, interrupted and resumed, and of a run killed after a call's commit
// and resumed by a new engine; what is stored reads back and encodes to the same bytes.
func TestTheStoredRecordIsTheBytesJSONMarshalMakes(t *testing.T) {
	before, bad := encodeChecks.Load(), mismatches()
	st := &kvRunStore{MemoryStore: loop.NewMemoryStore()}
	r := newRigOn(t, loop.ToolPolicy{}, func(*loop.MemoryStore) loop.SessionStore { return st })
	w, err := Compile("mix", Definition{MaxParallel: 2, Steps: []Step{
		{ID: "collect", Tool: "split", Arguments: map[string]any{"text": "${inputs.text}"}},
		{ID: "analyse", Tool: "upper", ForEach: "steps.collect.output", Arguments: map[string]any{"word": "${item}"}},
		{ID: "flaky", Tool: "flaky", Retry: 3},
		{ID: "never", Tool: "join", If: "false", Arguments: map[string]any{"words": []any{"x"}}},
		{ID: "ok", Approval: "Join ${size(steps.analyse.output)} words?"},
		{ID: "report", Tool: "join", Arguments: map[string]any{"words": "${steps.analyse.output}"}, DependsOn: []string{"ok", "flaky"}, Output: "joined"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	in := json.RawMessage(`{"text":"<b>  a&b \u00e9t\u00e9 \u2028 \"q\""}`)
	res, err := r.engine.Run(context.Background(), w, RunInput{RunID: "m1", Inputs: in}, nil)
	if err != nil || res.Record.Status != RunInterrupted {
		t.Fatalf("%v %+v", err, res.Record)
	}
	storedIsMarshal(t, st, "mix", "m1", res.Record)
	res, err = r.engine.Run(context.Background(), w, RunInput{RunID: "m1", Approvals: map[string]Decision{"ok": {Approved: true, Comment: "<yes>"}}}, nil)
	if err != nil || res.Record.Status != RunCompleted || res.Record.Outputs["joined"] != "<B>-A&B-ÉTÉ-Q" { // "Q" is JSON text: a string
		t.Fatalf("%v %+v", err, res.Record)
	}
	rec := storedIsMarshal(t, st, "mix", "m1", res.Record)
	if rec.Steps["flaky"].Attempts != 3 || rec.Steps["never"].Status != StatusSkipped || len(rec.Steps["analyse"].Items) != 4 {
		t.Fatalf("stored steps %+v", rec.Steps)
	}

	// Killed right after b's call's end was committed; a new engine resumes the run.
	kst := &kvRunStore{MemoryStore: loop.NewMemoryStore(), cut: 4}
	k := newRigOn(t, loop.ToolPolicy{}, func(*loop.MemoryStore) loop.SessionStore { return kst })
	if res, _ := k.engine.Run(context.Background(), chain(t), RunInput{RunID: "k1"}, nil); res.Record == nil || res.Record.Status == RunCompleted {
		t.Fatalf("the run went on past the kill: %+v", res.Record)
	}
	rec = storedIsMarshal(t, kst, "chain", "k1", nil)
	if rec.Steps["b"].Status != StatusOK || rec.Steps["c"] != nil {
		t.Fatalf("stored at the kill %+v", rec.Steps)
	}
	kst2 := &kvRunStore{MemoryStore: kst.MemoryStore}
	k2 := newRigOn(t, loop.ToolPolicy{}, func(*loop.MemoryStore) loop.SessionStore { return kst2 })
	res, err = k2.engine.Run(context.Background(), chain(t), RunInput{RunID: "k1"}, nil)
	if err != nil || res.Record.Status != RunCompleted {
		t.Fatalf("resume: %v %+v", err, res.Record)
	}
	storedIsMarshal(t, kst2, "chain", "k1", res.Record)

	if n := encodeChecks.Load() - before; n < 15 {
		t.Fatalf("%d stored records were checked against json.Marshal, want every write (≥ 15)", n)
	}
	if mismatches() != bad {
		encodeMu.Lock()
		defer encodeMu.Unlock()
		t.Fatalf("a stored record differs from json.Marshal's:\n%s", encodeMismatch[len(encodeMismatch)-1])
	}
}

// The encoder's kept bytes (the head, the ended steps) follow every change the engine
// makes to a record between two writes: each field alone, a step replaced, a running
// step changed in place.
func TestTheRecordEncoderFollowsEveryChangeBetweenWrites(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	r := &Record{Workflow: "w", RunID: "r", Inputs: json.RawMessage(`{"a":"<1>"}`), Status: RunRunning, Started: t0,
		Steps: map[string]*StepRecord{"b": {Status: StatusOK, Output: "x"}, "a": {Status: StatusRunning, Attempts: 1}}}
	st := loop.NewMemoryStore()
	var e recWriter
	e.start(recordKey("w", "", "r"), rowsAt(recordKey("w", "", "r"), t0), nil, nil, nil, false)
	check := func(what string) {
		t.Helper()
		kv, done, err := e.writes(r)
		if err == nil {
			err = setAll(context.Background(), st, kv)
		}
		if err != nil {
			t.Fatal(err)
		}
		done()
		back, ok, err := LoadRecord(context.Background(), st, "w", "r")
		got, _ := json.Marshal(back)
		want, _ := json.Marshal(r)
		if err != nil || !ok || !bytes.Equal(got, want) {
			t.Fatalf("after %s: read back %s, json.Marshal %s (%v)", what, got, want, err)
		}
		if msg := checkWrites(e.key, e.at, r, kv); msg != "" {
			t.Fatal(msg)
		}
	}
	check("the first write")
	changes := []struct {
		what string
		do   func()
	}{
		{"status", func() { r.Status = RunFailed }},
		{"error", func() { r.Error = "e&" }},
		{"owner", func() { r.Owner = "u" }},
		{"inputs changed in place", func() { r.Inputs[6] = '2' }},
		{"started", func() { r.Started = t0.Add(time.Nanosecond) }},
		{"started's zone", func() { r.Started = r.Started.In(time.FixedZone("x", 3600)) }},
		{"ended", func() { r.Ended = t0 }},
		{"outputs", func() { r.Outputs = map[string]any{"o": 1} }},
		{"outputs changed in place", func() { r.Outputs["o"] = 2 }},
		{"a running step changed in place", func() { r.Steps["a"].Attempts++ }},
		{"a running step's items", func() { r.Steps["a"].Items = []*ItemRecord{{Status: StatusOK, Output: "<i>"}} }},
		{"an ended step replaced", func() { r.Steps["b"] = &StepRecord{Status: StatusFailed, Error: "no"} }},
		{"a step added", func() { r.Steps["0"] = &StepRecord{Status: StatusSkipped} }},
		{"a running step ended in place", func() { r.Steps["a"].Status, r.Steps["a"].Output = StatusOK, "<o>" }},
	}
	for _, c := range changes {
		c.do()
		check(c.what)
	}
}

// saveRecord stores r whole, as the engine did before rows (rows.go): a record such
// a release left behind.
func saveRecord(ctx context.Context, st loop.SessionStore, r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return st.KVSet(ctx, KVNamespace, recordKey(r.Workflow, r.Owner, r.RunID), b)
}
