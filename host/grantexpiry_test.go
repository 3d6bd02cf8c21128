package host

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// An expired grant is deleted, not only hidden: on the host's clock (injected here), a
// grant "for ana for 1 hour" answers a call in another session of hers while it lives;
// once the hour has passed its row is still in the store until the grants are next
// read, and the next call's check deletes it (and asks); a listing then shows nothing.
func TestAnExpiredGrantIsDeletedWhenTheGrantsAreNextRead(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	ap := &queueApprover{answers: []loop.Approval{{Approved: true, Scope: loop.ScopeUser, For: time.Hour}}}
	var ran []string
	h := openApprovalHost(t, "kind = \"sqlite\"\npath = \"sessions.db\"", `{"turns": [
	  {"tool_calls": [{"id": "c2", "name": "transfer", "arguments": "{\"amount\": 500}"}]}, {"text": "paid"}]}`,
		ap, &ran, func(o *Options) { o.Clock = clock })
	ctx := context.Background()
	ana := h.Local(ctx, "ana")
	pay := func(session string) loop.RunResult {
		t.Helper()
		res, err := h.Door().Run(ctx, ana, loop.RunInput{SessionID: session, User: "ana", Messages: []loop.Message{loop.UserMessage("pay")}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	rows := func() int {
		t.Helper()
		keys, err := h.Store.(loop.KVLister).KVKeys(ctx, grantsKV, "", -1)
		if err != nil {
			t.Fatal(err)
		}
		return len(keys)
	}

	if res := pay("s1"); res.Status != loop.StatusCompleted {
		t.Fatalf("s1: %s/%s", res.Status, res.Reason)
	}
	gs, err := h.Grants(ctx)
	if err != nil || len(gs) != 1 || gs[0].Scope != loop.ScopeUser || gs[0].User != "ana" || !gs[0].Expires.Equal(now.Add(time.Hour)) {
		t.Fatalf("grants %+v %v: want ana's, expiring at %s", gs, err, now.Add(time.Hour))
	}
	advance(59 * time.Minute)
	if res := pay("s2"); res.Status != loop.StatusCompleted || !slices.Equal(ap.asked, []string{"c2"}) {
		t.Fatalf("s2 within the hour: %s/%s asked %v", res.Status, res.Reason, ap.asked)
	}

	advance(time.Minute) // the grant's expiry: it allows nothing from now on
	if n := rows(); n != 1 {
		t.Fatalf("%d grant rows before the next read, want 1", n)
	}
	if res := pay("s3"); res.Status != loop.StatusInterrupted || !slices.Equal(ap.asked, []string{"c2", "c2"}) {
		t.Fatalf("s3 after the hour: %s/%s asked %v (want asked again)", res.Status, res.Reason, ap.asked)
	}
	if n := rows(); n != 0 {
		t.Fatalf("%d grant rows after the call's check, want 0: the expired grant was not deleted", n)
	}
	if gs, err := h.Grants(ctx); err != nil || len(gs) != 0 {
		t.Fatalf("listed after expiry: %+v %v", gs, err)
	}
	if !slices.Equal(ran, []string{"c2", "c2"}) {
		t.Fatalf("ran %v: want s1's and s2's calls only", ran)
	}
}
