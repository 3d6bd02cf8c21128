package store

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

func TestDeleteSessionRemovesEntriesAndRunsButNotARunningOne(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	for _, id := range []string{"gone", "kept", "busy"} {
		if err := s.Append(ctx, id, loop.Entry{Seq: 1, Kind: loop.EntryMessage, Message: &loop.Message{Role: loop.RoleUser}}); err != nil {
			t.Fatal(err)
		}
		s.SaveRun(ctx, loop.RunRecord{ID: "r-" + id, SessionID: id, Started: time.Now()})
	}
	lease := loop.Lease{SessionID: "busy", RunID: "r-busy", PID: os.Getpid(), Host: "h", Instance: "i", Heartbeat: time.Now()}
	if _, err := s.AcquireLease(ctx, lease, func(loop.Lease) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSession(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if es, _ := s.Load(ctx, "gone"); len(es) != 0 {
		t.Fatalf("entries left: %d", len(es))
	}
	if rs, _ := s.Runs(ctx, "gone"); len(rs) != 0 {
		t.Fatalf("runs left: %d", len(rs))
	}
	if es, _ := s.Load(ctx, "kept"); len(es) != 1 {
		t.Fatal("another session was touched")
	}
	if err := s.DeleteSession(ctx, "busy"); !errors.Is(err, loop.ErrSessionBusy) {
		t.Fatalf("deleting a running session: %v", err)
	}
	var _ loop.SessionDeleter = s
	var _ loop.SessionDeleter = loop.NewMemoryStore()
}
