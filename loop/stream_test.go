package loop

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// endStore signals when a run's final record is saved.
type endStore struct {
	SessionStore
	ended chan RunRecord
}

func (s endStore) SaveRun(ctx context.Context, r RunRecord) error {
	if r.Status != "" {
		s.ended <- r
	}
	return s.SessionStore.SaveRun(ctx, r)
}

func TestRunStreamNeverBlocksOnAReaderThatStopped(t *testing.T) {
	var ds []Delta
	for i := range 500 {
		ds = append(ds, Delta{Seq: i + 1, Kind: DeltaText, Text: "x"})
	}
	st := endStore{NewMemoryStore(), make(chan RunRecord, 1)}
	a := newAgent(t, Config{Model: script(turn{deltas: ds}), Store: st})
	ch := a.RunStream(context.Background(), userIn("s1", "go")) // never read
	if rec := <-st.ended; rec.Status != StatusCompleted {
		t.Fatalf("run ended %s", rec.Status)
	}
	n := 0
	for range ch { // everything is still delivered to a late reader
		n++
	}
	if n != 500+9 { // the deltas, their finish and eight more
		t.Fatalf("%d events", n)
	}
}

func TestEventsYieldsEveryEventAndTheError(t *testing.T) {
	a := newAgent(t, Config{Model: script(turn{text: "hi"})})
	var got []Event
	for e, err := range a.Events(context.Background(), userIn("s1", "go")) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
	}
	equal(t, "events", kinds(got), []string{"run_started", "status:preparing", "status:model_running",
		"assistant_message", "usage", "final", "status:completed", "run_finished:completed/end_turn"})

	var last error
	for _, err := range a.Events(context.Background(), RunInput{SessionID: "s2"}) {
		last = err
	}
	if last == nil || !strings.Contains(last.Error(), "no input messages") {
		t.Fatalf("last error %v", last)
	}
}

func TestEventsBreakAbortsTheRunAndFreesTheSession(t *testing.T) {
	m := script(turn{hang: true}, turn{text: "second"})
	a := newAgent(t, Config{Model: m})
	for e := range a.Events(context.Background(), userIn("s1", "go")) {
		if e.Type == EventStatus && e.Data.(*StatusData).State == StateModelRunning {
			break
		}
	}
	res, err := a.Run(context.Background(), userIn("s1", "again"))
	if errors.Is(err, ErrSessionBusy) || res.Status != StatusCompleted {
		t.Fatalf("second run: %s %v", res.Status, err)
	}
	runs := 0
	entries, _ := a.Store().Load(context.Background(), "s1")
	for _, e := range entries {
		if e.Kind == EntryEvent && e.Event.Type == EventRunFinished {
			runs++
			if runs == 1 && e.Event.Data.(*RunFinishedData).Status != StatusAborted {
				t.Fatalf("first run ended %+v", e.Event.Data)
			}
		}
	}
	if runs != 2 {
		t.Fatalf("%d run_finished stored", runs)
	}
}
