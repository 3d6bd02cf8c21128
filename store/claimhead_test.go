package store

import (
	"context"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/loop/looptest"
)

// A run's start is one read: its claim state and its session's head come from one
// statement on the point-read pool (one snapshot), not two read transactions, and the
// run starts from that head. Checked on a chat's first and next turn: the next turn's
// model call carries the first turn's messages, read by that one statement.
func TestARunsStartIsOneRead(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	m := looptest.NewModel(looptest.Turn{Text: "first answer"}, looptest.Turn{Text: "second answer"})
	a, err := loop.New(loop.Config{Name: "p", Model: m, Store: s})
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range []string{"first question", "second question"} {
		before := s.point.reads.Load()
		res, err := a.RunWith(ctx, loop.RunInput{SessionID: "chat", Messages: []loop.Message{loop.UserMessage(text)}}, nil)
		if err != nil || res.Status != loop.StatusCompleted {
			t.Fatalf("turn %d: %v %+v", i+1, err, res)
		}
		if got := s.point.reads.Load() - before; got != 1 {
			t.Fatalf("turn %d read %d statements at its start, want 1 (claim state and head together)", i+1, got)
		}
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	var texts []string
	for _, msg := range reqs[1].Messages {
		texts = append(texts, msg.Text())
	}
	want := []string{"first question", "first answer", "second question"}
	if len(texts) != len(want) {
		t.Fatalf("the second turn's model call got %q, want %q", texts, want)
	}
	for i := range want {
		if texts[i] != want[i] {
			t.Fatalf("the second turn's model call got %q, want %q", texts, want)
		}
	}
}

// The head read with the claim state is what LoadHead reads at that moment, on a new
// session, on a cached head (only what was appended since is read), and after another
// process appended behind the cache (the anchor still holds: only the new rows are read).
func TestTheHeadReadWithTheClaimStateIsLoadHeads(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	check := func(step string) {
		t.Helper()
		cs, err := s.ClaimState(ctx, "h", "r-new")
		if err != nil || cs.Head == nil {
			t.Fatalf("%s: head %v, %v", step, cs.Head, err)
		}
		es, err := s.Load(ctx, "h")
		if err != nil {
			t.Fatal(err)
		}
		want := loop.HeadOf(es)
		got := *cs.Head
		if got.LastSeq != want.LastSeq || got.LastEventSeq != want.LastEventSeq || len(got.Transcript) != len(want.Transcript) {
			t.Fatalf("%s: head %d/%d/%d entries, want %d/%d/%d", step, got.LastSeq, got.LastEventSeq, len(got.Transcript), want.LastSeq, want.LastEventSeq, len(want.Transcript))
		}
		for i := range want.Transcript {
			if got.Transcript[i].Seq != want.Transcript[i].Seq || got.Transcript[i].Message.Text() != want.Transcript[i].Message.Text() {
				t.Fatalf("%s: transcript entry %d differs", step, i)
			}
		}
	}
	check("empty session")
	appendTurn(t, s, "h", 1, "one")
	check("first read")
	appendTurn(t, s, "h", 3, "two")
	check("cached head, rows appended since")
	other, err := OpenSQLite(s.Path()) // another process's store on the same file
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	appendTurn(t, other, "h", 5, "three")
	check("appended by another store")
}

// appendTurn appends a message and an event at seq and seq+1.
func appendTurn(t *testing.T, s *SQLite, session string, seq int64, text string) {
	t.Helper()
	now := time.Now().UTC()
	err := s.Append(context.Background(), session,
		loop.Entry{Seq: seq, Kind: loop.EntryMessage, RunID: "r", Time: now, Message: &loop.Message{Role: loop.RoleUser, Content: []loop.Part{{Type: loop.PartText, Text: text}}}},
		loop.Entry{Seq: seq + 1, Kind: loop.EntryEvent, RunID: "r", Time: now, Event: &loop.Event{Seq: seq + 1, Type: loop.EventRunStarted, RunID: "r", SessionID: session, Time: now, Data: &loop.RunStartedData{}}})
	if err != nil {
		t.Fatal(err)
	}
}

// A write landing between a run's start read and its first write fails that write: the
// run started from a head that is no longer the session's, so it stores nothing and
// calls nothing, as with a separate head read before.
func TestAWriteBetweenARunsStartReadAndItsFirstWriteFailsTheRun(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	m := looptest.NewModel(looptest.Turn{Text: "never"})
	st := takenAfterStart{s, func() { appendTurn(t, s, "w", 1, "someone else's") }}
	a, err := loop.New(loop.Config{Name: "p", Model: m, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.RunWith(ctx, loop.RunInput{SessionID: "w", RunID: "mine", Messages: []loop.Message{loop.UserMessage("hello")}}, nil)
	if res.Status != loop.StatusFailed || err == nil {
		t.Fatalf("got %s, %v; want the run failed", res.Status, err)
	}
	if n := len(m.Requests()); n != 0 {
		t.Fatalf("the model was called %d times", n)
	}
	es, err := s.Load(ctx, "w")
	if err != nil || len(es) != 2 {
		t.Fatalf("stored %d entries (%v), want only the other writer's 2", len(es), err)
	}
	if _, held, err := s.Lease(ctx, "w"); err != nil || held {
		t.Fatalf("the failed run left the lease held=%v (%v)", held, err)
	}
	if runs, err := s.Runs(ctx, "w"); err != nil || len(runs) != 0 {
		t.Fatalf("the failed run stored a record: %+v (%v)", runs, err)
	}
}

// The claim row read with the head says what is there: the lease's every field, a run
// id used, an open run; and nothing of the kind on a session without them.
func TestTheClaimStateReadWithTheHeadNamesTheLeaseAndRuns(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	cs, err := s.ClaimState(ctx, "c", "r1")
	if err != nil || cs.Held || cs.RunUsed || cs.OpenRuns || cs.Head == nil || cs.Head.LastSeq != 0 {
		t.Fatalf("empty session: %+v %v", cs, err)
	}
	hb := time.Date(2026, 11, 28, 1, 2, 3, 456, time.UTC)
	l := loop.Lease{SessionID: "c", RunID: "r2", PID: 4242, Host: `a "host"|x`, Instance: "inst", Heartbeat: hb}
	if _, err := s.AcquireLease(ctx, l, func(loop.Lease) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveRun(ctx, loop.RunRecord{ID: "r1", SessionID: "c", Status: loop.StatusCompleted}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveRun(ctx, loop.RunRecord{ID: "r2", SessionID: "c"}); err != nil {
		t.Fatal(err)
	}
	cs, err = s.ClaimState(ctx, "c", "r1")
	if err != nil || !cs.Held || !cs.RunUsed || !cs.OpenRuns {
		t.Fatalf("claim state: %+v %v", cs, err)
	}
	if got := cs.Lease; got.SessionID != "c" || got.RunID != "r2" || got.PID != 4242 || got.Host != l.Host || got.Instance != "inst" || !got.Heartbeat.Equal(hb) {
		t.Fatalf("lease %+v, want %+v", got, l)
	}
	if cs, err = s.ClaimState(ctx, "c", "r3"); err != nil || cs.RunUsed {
		t.Fatalf("an unused run id: %+v %v", cs, err)
	}
}
