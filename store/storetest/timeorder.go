package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// timeOrder: runs list in the order they started and sessions by their last activity
// even when the times differ below the second and print with fractions of different
// lengths (RFC 3339 drops trailing zeros: "…:00.5Z" and "…:00.55Z" compare as text the
// wrong way round).
func timeOrder(t *testing.T, s loop.SessionStore) {
	ctx := context.Background()
	half, more := t0.Add(500*time.Millisecond), t0.Add(550*time.Millisecond)
	for _, r := range []loop.RunRecord{{ID: "early", SessionID: "o", Started: half}, {ID: "late", SessionID: "o", Started: more}} {
		if err := s.SaveRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.Runs(ctx, "o"); err != nil || len(got) != 2 || got[0].ID != "early" || got[1].ID != "late" {
		t.Fatalf("runs %+v %v, want early then late", got, err)
	}
	if _, ok := s.(loop.SessionLister); !ok {
		return
	}
	for id, at := range map[string]time.Time{"at-half": half, "at-more": more} {
		es := entries(id, "r", 1, 1)
		es[0].Time = at
		if err := s.Append(ctx, id, es...); err != nil {
			t.Fatal(err)
		}
	}
	got, err := loop.ListSessions(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, si := range got {
		if si.ID == "at-half" || si.ID == "at-more" {
			order = append(order, si.ID)
		}
	}
	if len(order) != 2 || order[0] != "at-more" {
		t.Fatalf("sessions %v, want at-more (the later) first", order)
	}
}
