package loop

import (
	"context"
	"errors"
	"testing"
)

type diskFullStore struct{ SessionStore }

func (diskFullStore) Append(context.Context, string, ...Entry) error { return errors.New("disk full") }

func TestJournal_NumbersEventsAndEntriesAndKeepsDeltasOut(t *testing.T) {
	st := NewMemoryStore()
	var live []Event
	j := journal{sessions: st, ctx: context.Background(), session: "s", runID: "r", agent: "a",
		clock: GoDriver{}, emitFn: func(e Event) { live = append(live, e) }, evSeq: 7}
	j.emit(EventRunStarted, RunStartedData{})
	j.emit(EventModelDelta, ModelDeltaData{Text: "x"})
	j.emit(EventText, TextData{Text: "x"})
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
	bad.emit(EventText, TextData{})
	if err := bad.store(); err == nil || err.Error() != `store session "s": disk full` {
		t.Fatalf("err %v", err)
	}
}
