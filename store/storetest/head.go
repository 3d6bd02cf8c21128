package storetest

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// headMatchesLoad: LoadHead gives what loop.HeadOf makes of Load (the transcript's
// messages and compactions in order, the last entry's seq, the last event's own seq),
// at every point of a session's history: empty, events only, a message last, an event
// last, after a compaction, and on another session with the same entries interleaved.
func headMatchesLoad(t *testing.T, s loop.SessionStore) {
	hl, ok := s.(loop.HeadLoader)
	if !ok {
		t.Fatalf("%T is no loop.HeadLoader: every run would decode its whole session", s)
	}
	ctx := context.Background()
	check := func(session string, want loop.SessionHead) {
		t.Helper()
		got, err := hl.LoadHead(ctx, session)
		if err != nil {
			t.Fatalf("LoadHead %s: %v", session, err)
		}
		es, err := s.Load(ctx, session)
		if err != nil {
			t.Fatal(err)
		}
		if a, b, c := headJSON(t, got), headJSON(t, loop.HeadOf(es)), headJSON(t, want); a != b || a != c {
			t.Fatalf("session %s:\nLoadHead %s\nHeadOf   %s\nwant     %s", session, a, b, c)
		}
	}
	check("h", loop.SessionHead{})

	at := func(seq int64) time.Time { return t0.Add(time.Duration(seq) * time.Millisecond) }
	msg := func(seq int64, text string) loop.Entry {
		return loop.Entry{Seq: seq, RunID: "r1", Time: at(seq), Kind: loop.EntryMessage, Message: &loop.Message{Role: loop.RoleUser, Content: []loop.Part{loop.TextPart(text)}}}
	}
	ev := func(seq, evSeq int64) loop.Entry {
		return loop.Entry{Seq: seq, RunID: "r1", Time: at(seq), Kind: loop.EntryEvent, Event: &loop.Event{Seq: evSeq, Time: at(seq), SessionID: "h", RunID: "r1",
			Type: loop.EventStatus, Data: &loop.StatusData{State: loop.StateModelRunning}}}
	}
	comp := loop.Entry{Seq: 7, RunID: "r1", Time: at(7), Kind: loop.EntryCompaction, Compaction: &loop.Compaction{Replace: 1, Summary: []loop.Message{loop.UserMessage("sum")}}}
	steps := []struct {
		add  []loop.Entry
		want loop.SessionHead
	}{
		{[]loop.Entry{ev(1, 1), ev(2, 3)}, loop.SessionHead{LastSeq: 2, LastEventSeq: 3}},
		{[]loop.Entry{msg(3, "one"), ev(4, 4), msg(5, "two")}, loop.SessionHead{Transcript: []loop.Entry{msg(3, "one"), msg(5, "two")}, LastSeq: 5, LastEventSeq: 4}},
		{[]loop.Entry{ev(6, 9), comp, ev(8, 10)}, loop.SessionHead{Transcript: []loop.Entry{msg(3, "one"), msg(5, "two"), comp}, LastSeq: 8, LastEventSeq: 10}},
		{[]loop.Entry{msg(9, "three")}, loop.SessionHead{Transcript: []loop.Entry{msg(3, "one"), msg(5, "two"), comp, msg(9, "three")}, LastSeq: 9, LastEventSeq: 10}},
	}
	var other int64
	for i, st := range steps {
		if err := s.Append(ctx, "h", st.add...); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		// Another session with entries at the same seqs: a head is one session's.
		if err := s.Append(ctx, "other", entries("other", "r9", other+1, len(st.add))...); err != nil {
			t.Fatal(err)
		}
		other += int64(len(st.add))
		check("h", st.want)
	}
	check("nobody", loop.SessionHead{})

	// Deleted and written again, longer, with other words at the same seqs: the head is
	// the new session's, not the one loaded before with what came after it.
	if d, ok := s.(loop.SessionDeleter); ok {
		if err := d.DeleteSession(ctx, "h"); err != nil {
			t.Fatal(err)
		}
		check("h", loop.SessionHead{})
		again := entries("h", "r2", 1, 12)
		if err := s.Append(ctx, "h", again...); err != nil {
			t.Fatal(err)
		}
		check("h", loop.SessionHead{Transcript: again, LastSeq: 12})
	}
}

// headJSON is a head as JSON, to compare heads by value (times in UTC: a store may give
// them back in another location).
func headJSON(t *testing.T, h loop.SessionHead) string {
	t.Helper()
	h = WithoutMessages(t, h)
	h.Transcript = append([]loop.Entry(nil), h.Transcript...) // the store's may be shared
	for i := range h.Transcript {
		h.Transcript[i].Time = h.Transcript[i].Time.UTC()
	}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// WithoutMessages is h without its Messages, once they are checked to be what
// loop.SessionHead says: when set, the message of every Transcript entry, in order, none
// a compaction.
func WithoutMessages(t testing.TB, h loop.SessionHead) loop.SessionHead {
	t.Helper()
	if h.Messages == nil {
		return h
	}
	if len(h.Messages) != len(h.Transcript) {
		t.Fatalf("head: %d messages for %d transcript entries", len(h.Messages), len(h.Transcript))
	}
	for i, e := range h.Transcript {
		if e.Kind != loop.EntryMessage || e.Message == nil || !reflect.DeepEqual(*e.Message, h.Messages[i]) {
			t.Fatalf("head: Messages[%d] is not the message of transcript entry %d (%s)", i, e.Seq, e.Kind)
		}
	}
	h.Messages = nil
	return h
}
