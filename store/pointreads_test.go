package store

import (
	"context"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/loop/looptest"
)

// A run's start reads on the writer's connection when the writer is idle: the one
// statement of the start (claim state and head) counts as a warm read, and the run
// starts from what it read (the second turn's model call carries the first turn).
func TestARunsStartReadsOnTheIdleWritersConnection(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	m := looptest.NewModel(looptest.Turn{Text: "first answer"}, looptest.Turn{Text: "second answer"})
	a, err := loop.New(loop.Config{Name: "p", Model: m, Store: s})
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range []string{"first question", "second question"} {
		reads, warm := s.point.reads.Load(), s.point.warm.Load()
		res, err := a.RunWith(ctx, loop.RunInput{SessionID: "chat", Messages: []loop.Message{loop.UserMessage(text)}}, nil)
		if err != nil || res.Status != loop.StatusCompleted {
			t.Fatalf("turn %d: %v %+v", i+1, err, res)
		}
		if r, w := s.point.reads.Load()-reads, s.point.warm.Load()-warm; r != 1 || w != 1 {
			t.Fatalf("turn %d: %d reads at its start, %d on the writer's connection; want 1 and 1", i+1, r, w)
		}
	}
	reqs := m.Requests()
	if len(reqs) != 2 || len(reqs[1].Messages) != 3 || reqs[1].Messages[1].Text() != "first answer" {
		t.Fatalf("the second turn's model call did not carry the first turn: %+v", reqs)
	}
}

// A read while a write holds the writer's connection does not wait for it: it runs on
// the read pool, beside the write, and sees what was committed before it.
func TestAReadWhileTheWriterIsBusyRunsOnThePool(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	if err := s.Append(ctx, "s", msgEntry(1, "one")); err != nil {
		t.Fatal(err)
	}
	s.heads.Drop("s") // a cold read
	release := holdWriter(t, s)
	defer release()
	warm := s.point.warm.Load()
	done := make(chan error, 1)
	var h loop.SessionHead
	go func() {
		var err error
		h, err = s.LoadHead(ctx, "s")
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a read waited for the write holding the writer's connection")
	}
	if got := s.point.warm.Load() - warm; got != 0 {
		t.Fatalf("%d reads ran on the busy writer's connection", got)
	}
	if h.LastSeq != 1 || len(h.Transcript) != 1 || h.Transcript[0].Message.Text() != "one" {
		t.Fatalf("head %+v, want the one message committed", h)
	}
}

// A write that arrives while a read's rows are open on the writer's connection waits
// for them to be closed, then commits: a read never sees a write's transaction half
// done, and a write never starts inside a read.
func TestAWriteWaitsForAWarmReadsRowsToClose(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	if err := s.Append(ctx, "s", msgEntry(1, "one")); err != nil {
		t.Fatal(err)
	}
	warm := s.point.warm.Load()
	rows, err := s.point.query(ctx, `SELECT seq FROM entries WHERE session = ?`, "s")
	if err != nil {
		t.Fatal(err)
	}
	if s.point.warm.Load()-warm != 1 {
		t.Fatal("the read did not run on the idle writer's connection")
	}
	done := make(chan error, 1)
	go func() { done <- s.Append(ctx, "s", msgEntry(2, "two")) }()
	queued(s, 1)
	select {
	case err := <-done:
		t.Fatalf("the write ran while a read held the writer's connection (%v)", err)
	default:
	}
	var seqs []int64
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, seq)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if len(seqs) != 1 || seqs[0] != 1 {
		t.Fatalf("the read saw seqs %v, want [1]", seqs)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	es, err := s.Load(ctx, "s")
	if err != nil || len(es) != 2 {
		t.Fatalf("after the read: %d entries, %v; want 2", len(es), err)
	}
}

// After a ROLLBACK that failed, the writer's connection may still be in a transaction:
// reads keep off it (they could see writes never committed) until a transaction
// begins and commits there again.
func TestReadsKeepOffTheWritersConnectionWhileATransactionMayBeOpen(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	if !s.w.tryHold() {
		t.Fatal("an idle writer was not held")
	}
	s.w.unsure = true // what a failed ROLLBACK leaves
	s.w.handOff()
	if s.w.tryHold() {
		t.Fatal("the writer's connection was lent to a read while a transaction may be open on it")
	}
	warm := s.point.warm.Load()
	if _, err := s.LoadHead(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if s.point.warm.Load() != warm {
		t.Fatal("a read ran on the writer's connection while a transaction may be open on it")
	}
	if err := s.Append(ctx, "s", msgEntry(1, "one")); err != nil {
		t.Fatal(err)
	}
	if !s.w.tryHold() {
		t.Fatal("a commit did not give the writer's connection back to reads")
	}
	s.w.handOff()
}
