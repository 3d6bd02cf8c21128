package loop

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

type diskFullStore struct{ SessionStore }

func (diskFullStore) Append(context.Context, string, ...Entry) error { return errors.New("disk full") }

func TestJournal_NumbersEventsAndEntriesAndKeepsDeltasOut(t *testing.T) {
	st := NewMemoryStore()
	var live []Event
	j := journal{sessions: st, ctx: context.Background(), session: "s", runID: "r", agent: "a",
		clock: GoDriver{}, emitFn: func(e Event) { live = append(live, e) }, evSeq: 7}
	j.emit(EventRunStarted, &RunStartedData{})
	j.emit(EventModelDelta, &ModelDeltaData{Text: "x"})
	j.emit(EventText, &TextData{Text: "x"})
	m := UserMessage("hi")
	if err := j.store(Entry{Kind: EntryMessage, Message: &m}); err != nil {
		t.Fatal(err)
	}
	equal(t, "live seqs", []int64{live[0].Seq, live[1].Seq, live[2].Seq}, []int64{8, 9, 10})
	entries, _ := st.Load(context.Background(), "s")
	if len(entries) != 3 || entries[0].Seq != 1 || entries[0].Event.Seq != 8 || entries[1].Event.Seq != 10 ||
		entries[2].Seq != 3 || entries[2].Kind != EntryMessage || len(j.pending) != 0 {
		t.Fatalf("entries %+v", entries)
	}
	if err := j.store(); err != nil {
		t.Fatal("an empty append must be a no-op")
	}
	bad := journal{sessions: diskFullStore{st}, ctx: context.Background(), session: "s", clock: GoDriver{}}
	bad.emit(EventText, &TextData{})
	if err := bad.store(); err == nil || err.Error() != `store session "s": disk full` {
		t.Fatalf("err %v", err)
	}
}

// Events are written into the slab the store receives them in (no copy at a flush): an
// event a store already holds is never overwritten by the ones emitted after it, across
// flushes and when the pending events outgrow their slab.
func TestJournal_StoredEventsStayAsStoredWhileMoreAreEmitted(t *testing.T) {
	st := NewMemoryStore()
	j := journal{sessions: st, ctx: context.Background(), session: "s", runID: "r", agent: "a", clock: GoDriver{}}
	var want []string
	for _, n := range []int{3, 2*eventSlabSize + 1, 1, eventSlabSize} {
		for range n {
			text := fmt.Sprintf("t%d", len(want))
			want = append(want, text)
			j.emit(EventText, &TextData{Text: text})
		}
		if err := j.flush(); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := st.Load(context.Background(), "s")
	if len(entries) != len(want) {
		t.Fatalf("%d entries, want %d", len(entries), len(want))
	}
	for i, e := range entries {
		if d, _ := e.Event.Data.(*TextData); e.Seq != int64(i+1) || e.Event.Seq != int64(i+1) || d.Text != want[i] {
			t.Fatalf("entry %d: seq %d, event %d %+v, want %q", i, e.Seq, e.Event.Seq, e.Event.Data, want[i])
		}
	}
}

// Config.Scrub changes what is stored, never what the run holds or emits: the live event
// and the message the caller passed keep their text.
func TestJournal_ScrubChangesOnlyWhatIsStored(t *testing.T) {
	st := NewMemoryStore()
	var live []Event
	scrub := func(e Entry) Entry {
		switch {
		case e.Message != nil:
			m := UserMessage("[scrubbed]")
			e.Message = &m
		case e.Event != nil:
			ev := *e.Event
			ev.Data = &TextData{Text: "[scrubbed]"}
			e.Event = &ev
		}
		return e
	}
	j := journal{sessions: st, ctx: context.Background(), session: "s", runID: "r", clock: GoDriver{},
		emitFn: func(e Event) { live = append(live, e) }, scrub: scrub}
	j.emit(EventText, &TextData{Text: "ana@example.com"})
	m := UserMessage("call 555-123-4567")
	if err := j.store(Entry{Kind: EntryMessage, Message: &m}); err != nil {
		t.Fatal(err)
	}
	if live[0].Data.(*TextData).Text != "ana@example.com" || m.Text() != "call 555-123-4567" {
		t.Fatalf("the run's own values changed: %+v %q", live[0].Data, m.Text())
	}
	entries, _ := st.Load(context.Background(), "s")
	if len(entries) != 2 || entries[0].Event.Data.(*TextData).Text != "[scrubbed]" || entries[1].Message.Text() != "[scrubbed]" {
		t.Fatalf("stored %+v", entries)
	}
}
