package postgres

import (
	"context"
	"reflect"
	"testing"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/pgtest"
)

// A cold read gives its messages in one array across all the chunks and the rows after
// them (loop.SessionHead.Messages), as the SQLite store's does, with room after it that
// is the caller's: a second cold read gives another array, the head the store keeps
// never hands it out, and what the caller appends into the room changes nothing the
// store keeps. With a compaction in the transcript there is no such array.
func TestColdReadGivesItsMessagesInOneArrayOfItsOwn(t *testing.T) {
	s := open(t, pgtest.Start(t).NewDatabase(t))
	ctx := context.Background()
	es := chat("s", 1, 30, "w")
	for i := 0; i < len(es); { // several appends: several chunks, and rows after them
		n := min(1+i%23, len(es)-i)
		if err := s.Append(ctx, "s", es[i:i+n]...); err != nil {
			t.Fatal(err)
		}
		i += n
	}
	if n, last := projection(t, s, "s"); n < 2 || last >= lastTranscriptSeq(t, s, "s") {
		t.Fatalf("%d chunks ending at %d, want several and rows after them", n, last)
	}
	h := coldHead(t, s, "s")
	if len(h.Messages) != len(h.Transcript) || len(h.Messages) != 121 || cap(h.Messages) <= len(h.Messages) {
		t.Fatalf("%d messages (room %d) for %d entries", len(h.Messages), cap(h.Messages)-len(h.Messages), len(h.Transcript))
	}
	for i := range h.Transcript {
		if h.Transcript[i].Message != &h.Messages[i] {
			t.Fatalf("entry %d's message is not Messages[%d]: not one array", h.Transcript[i].Seq, i)
		}
	}
	sameHead(t, h, wantHead(t, s, "s")) // the transcript's messages, each
	kept := append([]loop.Entry(nil), h.Transcript...)
	room := append(h.Messages, loop.UserMessage("the caller's"), loop.UserMessage("and more"))
	if &room[0] != &h.Messages[0] {
		t.Fatal("no room after the messages")
	}
	cached, err := s.LoadHead(ctx, "s")
	if err != nil || cached.Messages != nil {
		t.Fatalf("the kept head handed out its messages: %v", err)
	}
	if !reflect.DeepEqual(cached.Transcript, kept) {
		t.Fatal("the caller's appends changed the kept head")
	}
	sameHead(t, cached, wantHead(t, s, "s"))
	if again := coldHead(t, s, "s"); len(again.Messages) != len(h.Messages) || &again.Messages[0] == &h.Messages[0] {
		t.Fatal("a second cold read shares the first's array")
	}

	comp := loop.Entry{Seq: int64(len(es) + 1), Kind: loop.EntryCompaction, Compaction: &loop.Compaction{Replace: 2, Summary: []loop.Message{loop.UserMessage("sum")}}}
	if err := s.Append(ctx, "s", comp); err != nil {
		t.Fatal(err)
	}
	if h := coldHead(t, s, "s"); h.Messages != nil || len(h.Transcript) != 122 {
		t.Fatalf("with a compaction: %d messages for %d entries", len(h.Messages), len(h.Transcript))
	}
}
