package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// runNotes: a RunNoter keeps a run's note with its record, written in the same
// AppendRunKV as its entries, and gives it back in Runs; a run written without one has
// none, and a refused write keeps neither. Other stores are not held to it.
func runNotes(t *testing.T, s loop.SessionStore) {
	rn, ok := s.(loop.RunNoter)
	if !ok {
		return
	}
	ctx := context.Background()
	start := loop.RunRecord{ID: "r1", SessionID: "n", Started: t0}
	if err := rn.AppendRunKV(ctx, start, nil, entries("n", "r1", 1, 1)...); err != nil {
		t.Fatal(err)
	}
	end := start
	end.Status, end.Reason, end.Ended, end.Note = loop.StatusCompleted, loop.ReasonDirectCall, t0, `{"status":"ok","output":"é \u2028 \x00"}`
	if err := rn.AppendRunKV(ctx, end, nil, entries("n", "r1", 2, 1)...); err != nil {
		t.Fatal(err)
	}
	other := loop.RunRecord{ID: "r2", SessionID: "n", Started: t0.Add(time.Second), Status: loop.StatusCompleted, Note: "refused"}
	if err := rn.AppendRunKV(ctx, other, nil, entries("n", "r2", 9, 1)...); err == nil {
		t.Fatal("a write with a gap was stored")
	}
	got, err := s.Runs(ctx, "n")
	if err != nil || len(got) != 1 || got[0].Note != end.Note || got[0].Status != loop.StatusCompleted {
		t.Fatalf("runs %+v %v, want r1 with its note", got, err)
	}
	if err := rn.AppendRunKV(ctx, loop.RunRecord{ID: "r3", SessionID: "n", Started: t0.Add(2 * time.Second)}, nil); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Runs(ctx, "n")
	for _, r := range got {
		if (r.ID == "r1") != (r.Note == end.Note) || (r.ID != "r1" && r.Note != "") {
			t.Fatalf("runs %+v: r1 alone has its note", got)
		}
	}
	if len(got) != 2 {
		t.Fatalf("runs %+v, want r1 and r3", got)
	}
}
