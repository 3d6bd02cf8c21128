package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// Every record the engine stores in this package's tests is checked against
// json.Marshal of the same record (what the engine stored before it kept the steps'
// encodings): a byte of difference fails the run.
var (
	encodeChecks   atomic.Int64
	encodeMu       sync.Mutex
	encodeMismatch []string
)

func TestMain(m *testing.M) {
	encodeCheck = func(r *Record, b []byte) {
		encodeChecks.Add(1)
		want, err := json.Marshal(r)
		if err != nil || !bytes.Equal(b, want) {
			encodeMu.Lock()
			encodeMismatch = append(encodeMismatch, fmt.Sprintf("stored %s\njson.Marshal %s (%v)", b, want, err))
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

// storedIsMarshal reads the stored record of run id and checks that its bytes are
// json.Marshal's of the record read back (and of want, the run's result, when set).
func storedIsMarshal(t *testing.T, st loop.SessionStore, workflow, id string, want *Record) *Record {
	t.Helper()
	b, ok, err := st.KVGet(context.Background(), KVNamespace, recordKey(workflow, "", id))
	if err != nil || !ok {
		t.Fatalf("no stored record for %s: %v", id, err)
	}
	rec, _, err := LoadRecord(context.Background(), st, workflow, id)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(rec)
	if !bytes.Equal(b, again) {
		t.Fatalf("stored %s\nread back and encoded %s", b, again)
	}
	if want != nil {
		if w, _ := json.Marshal(want); !bytes.Equal(b, w) {
			t.Fatalf("stored %s\nthe run's record %s", b, w)
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
	var e recEncoder
	check := func(what string) {
		t.Helper()
		got, err := e.encode(r)
		want, _ := json.Marshal(r)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("after %s: %s, json.Marshal %s (%v)", what, got, want, err)
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
		{"a step gone", func() { delete(r.Steps, "a") }},
	}
	for _, c := range changes {
		c.do()
		check(c.what)
	}
}
