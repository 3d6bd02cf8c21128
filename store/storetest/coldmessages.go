package storetest

import (
	"context"
	"reflect"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// ColdMessagesInOneArray holds a store's cold read of session (cold: a read that misses
// the store's kept head) to loop.SessionHead.Messages' rule: every transcript message
// in one array, with room after it that is the caller's; the head the store keeps
// (LoadHead) never hands it out and does not change when the caller appends into the
// room; a second cold read has an array of its own; once a compaction is appended
// there is no such array. want checks a head against the stored transcript. The
// session's transcript is n messages and its last entry is last.
func ColdMessagesInOneArray(t *testing.T, s loop.SessionStore, session string, n int, last int64, cold func() loop.SessionHead, want func(loop.SessionHead)) {
	t.Helper()
	ctx := context.Background()
	h := cold()
	if len(h.Messages) != len(h.Transcript) || len(h.Messages) != n || cap(h.Messages) <= len(h.Messages) {
		t.Fatalf("%d messages (room %d) for %d entries, want %d", len(h.Messages), cap(h.Messages)-len(h.Messages), len(h.Transcript), n)
	}
	for i := range h.Transcript {
		if h.Transcript[i].Message != &h.Messages[i] {
			t.Fatalf("entry %d's message is not Messages[%d]: not one array", h.Transcript[i].Seq, i)
		}
	}
	want(h)
	kept := append([]loop.Entry(nil), h.Transcript...)
	room := append(h.Messages, loop.UserMessage("the caller's"), loop.UserMessage("and more"))
	if &room[0] != &h.Messages[0] {
		t.Fatal("no room after the messages")
	}
	cached, err := s.(loop.HeadLoader).LoadHead(ctx, session)
	if err != nil || cached.Messages != nil {
		t.Fatalf("the kept head handed out its messages: %v", err)
	}
	if !reflect.DeepEqual(cached.Transcript, kept) {
		t.Fatal("the caller's appends changed the kept head")
	}
	want(cached)
	if again := cold(); len(again.Messages) != len(h.Messages) || &again.Messages[0] == &h.Messages[0] {
		t.Fatal("a second cold read shares the first's array")
	}
	comp := loop.Entry{Seq: last + 1, Kind: loop.EntryCompaction, Compaction: &loop.Compaction{Replace: 2, Summary: []loop.Message{loop.UserMessage("sum")}}}
	if err := s.Append(ctx, session, comp); err != nil {
		t.Fatal(err)
	}
	if h := cold(); h.Messages != nil || len(h.Transcript) != n+1 {
		t.Fatalf("with a compaction: %d messages for %d entries", len(h.Messages), len(h.Transcript))
	}
}
