package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/loop/looptest"
)

// Run runs the suite; open returns an empty store for each subtest.
func Run(t *testing.T, open func(t *testing.T) loop.SessionStore) {
	for _, c := range []struct {
		name string
		fn   func(*testing.T, loop.SessionStore)
	}{
		{"AppendLoadRoundTripsEveryKind", appendLoad},
		{"AppendRefusesGapsAndDuplicates", gaps},
		{"RunsAreKeyedBySession", runs},
		{"KV", kv},
		{"LeasesHaveOneOwner", leases},
		{"SessionsListMostRecentFirst", sessions},
		{"DeleteRefusesALeasedSession", deleteSession},
		{"ConcurrentAppendsOnOneSessionHaveOneWinner", raceOneSession},
		{"ConcurrentAppendsOnManySessionsAllSucceed", manySessions},
		{"LoopRunsAndContinuesOnTheStore", loopRuns},
		{"AppendRunWritesRecordAndEntriesOrNeitherAndEndsTheLease", appendRun},
		{"AWriterWhoseLeaseWasTakenOverIsFenced", fencing},
		{"FeedbackIsListedByTime", feedbackKept},
		{"LoadHeadIsLoadWithoutTheEventsButTheLast", headMatchesLoad},
		{"AttachmentsAreKeptOncePerSessionBoundedAndDeleted", attachments},
		{"ARunNoterKeepsARunsNoteWithItsRecord", runNotes},
		{"AKVRunAppenderSetsItsPairsWithTheRunOrNotAtAll", runKV},
		{"RunsAndSessionsAreOrderedByTimeBelowTheSecond", timeOrder},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open(t)) })
	}
}

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func entries(session, run string, from int64, n int) []loop.Entry {
	var out []loop.Entry
	for i := range n {
		seq := from + int64(i)
		out = append(out, loop.Entry{Seq: seq, RunID: run, Time: t0.Add(time.Duration(seq) * time.Second), Kind: loop.EntryMessage,
			Message: &loop.Message{Role: loop.RoleUser, Content: []loop.Part{loop.TextPart(fmt.Sprintf("%s #%d", session, seq))}}})
	}
	return out
}

func appendLoad(t *testing.T, s loop.SessionStore) {
	ctx := context.Background()
	in := []loop.Entry{
		{Seq: 1, RunID: "r1", Time: t0, Kind: loop.EntryMessage, Message: &loop.Message{Role: loop.RoleAssistant,
			Content:   []loop.Part{loop.TextPart("ünïcode ✓"), {Type: loop.PartImage, URL: "data:image/png;base64,AAAA", MimeType: "image/png"}},
			ToolCalls: []loop.ToolCall{{ID: "c1", Name: "calc", Arguments: `{"expression":"1+1"}`}}, Reasoning: "because", ReasoningState: `{"sig":"x"}`}},
		{Seq: 2, RunID: "r1", Time: t0.Add(time.Millisecond), Kind: loop.EntryCompaction, Compaction: &loop.Compaction{Replace: 1,
			Summary: []loop.Message{loop.UserMessage("summary")}}},
		{Seq: 3, RunID: "r1", Time: t0.Add(2 * time.Millisecond), Kind: loop.EntryEvent, Event: &loop.Event{Seq: 7, Time: t0, SessionID: "s", RunID: "r1",
			Agent: "a", Type: loop.EventToolResult, Data: &loop.ToolResultData{ID: "c1", Name: "calc", Content: "2", DurationMS: 3}}},
	}
	if err := s.Append(ctx, "s", in...); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(in)
	have, _ := json.Marshal(got)
	if string(want) != string(have) {
		t.Fatalf("loaded:\n%s\nstored:\n%s", have, want)
	}
	// A loaded event's data is the same typed payload a live one has: a pointer to its
	// struct (docs/loop.md#events), which consumers switch on.
	if d, ok := got[2].Event.Data.(*loop.ToolResultData); !ok || !reflect.DeepEqual(*d, *in[2].Event.Data.(*loop.ToolResultData)) {
		t.Fatalf("loaded event data %#v, want %#v", got[2].Event.Data, in[2].Event.Data)
	}
	if es, err := s.Load(ctx, "nobody"); err != nil || len(es) != 0 {
		t.Fatalf("unknown session: %v %v", es, err)
	}
}

func gaps(t *testing.T, s loop.SessionStore) {
	ctx := context.Background()
	if err := s.Append(ctx, "s", entries("s", "r", 1, 2)...); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]loop.Entry{entries("s", "r", 2, 1), entries("s", "r", 4, 1), append(entries("s", "r", 3, 1), entries("s", "r", 5, 1)...)} {
		if err := s.Append(ctx, "s", bad...); err == nil {
			t.Errorf("append of seq %d…: no error", bad[0].Seq)
		}
	}
	if es, _ := s.Load(ctx, "s"); len(es) != 2 {
		t.Fatalf("%d entries after refused appends, want 2", len(es))
	}
	if err := s.Append(ctx, "s", entries("s", "r", 3, 2)...); err != nil {
		t.Fatalf("the next seq is refused: %v", err)
	}
}

func runs(t *testing.T, s loop.SessionStore) {
	ctx := context.Background()
	u := loop.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7, CostUSD: 0.5}
	for _, r := range []loop.RunRecord{
		{ID: "r1", SessionID: "a", Started: t0},
		{ID: "r1", SessionID: "b", Started: t0.Add(time.Second), Status: loop.StatusFailed, Reason: loop.ReasonError, Ended: t0.Add(2 * time.Second)},
		{ID: "r2", SessionID: "a", Started: t0.Add(time.Minute)},
		{ID: "r1", SessionID: "a", Started: t0, Status: loop.StatusCompleted, Reason: loop.ReasonEndTurn, Ended: t0.Add(time.Second), Usage: u},
	} {
		if err := s.SaveRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Runs(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "r1" || got[0].Status != loop.StatusCompleted || got[0].Usage != u ||
		!got[0].Ended.Equal(t0.Add(time.Second)) || got[1].ID != "r2" || got[1].Status != "" {
		t.Fatalf("runs of a: %+v", got)
	}
	if b, _ := s.Runs(ctx, "b"); len(b) != 1 || b[0].Status != loop.StatusFailed {
		t.Fatalf("the same run id on another session was overwritten: %+v", b)
	}
}

func sessions(t *testing.T, s loop.SessionStore) {
	if _, ok := s.(loop.SessionLister); !ok {
		t.Fatalf("%T cannot list (loop.SessionLister)", s)
	}
	ctx := context.Background()
	old := entries("old", "r", 1, 2)
	recent := entries("recent", "r", 1, 1)
	recent[0].Time = t0.Add(time.Hour)
	if err := s.Append(ctx, "old", old...); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "recent", recent...); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveRun(ctx, loop.RunRecord{ID: "r", SessionID: "old", Started: t0}); err != nil {
		t.Fatal(err)
	}
	got, err := loop.ListSessions(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "recent" || got[1].ID != "old" || got[1].Entries != 2 || got[1].Runs != 1 ||
		!got[0].Updated.Equal(t0.Add(time.Hour)) {
		t.Fatalf("sessions %+v", got)
	}
}

func deleteSession(t *testing.T, s loop.SessionStore) {
	d, ok := s.(loop.SessionDeleter)
	ls, ok2 := s.(loop.Leaser)
	if !ok || !ok2 {
		t.Fatalf("%T cannot delete (loop.SessionDeleter) or lease", s)
	}
	ctx := context.Background()
	if err := s.Append(ctx, "s", entries("s", "r", 1, 3)...); err != nil {
		t.Fatal(err)
	}
	l := lease("s", "r", 1)
	if _, err := ls.AcquireLease(ctx, l, func(loop.Lease) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteSession(ctx, "s"); !errors.Is(err, loop.ErrSessionBusy) {
		t.Fatalf("delete of a leased session: %v", err)
	}
	if err := ls.ReleaseLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	fs, _ := s.(loop.FeedbackStore)
	if fs != nil { // a session's feedback goes with it; another session's stays
		for _, id := range []string{"s", "other"} {
			if err := fs.AddFeedback(ctx, loop.Feedback{SessionID: id, RunID: "r", Score: 1, Time: t0}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := d.DeleteSession(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if es, _ := s.Load(ctx, "s"); len(es) != 0 {
		t.Fatalf("%d entries after delete", len(es))
	}
	if fs != nil {
		if fb, err := fs.Feedback(ctx, t0); err != nil || len(fb) != 1 || fb[0].SessionID != "other" {
			t.Fatalf("feedback after deleting session s: %+v %v", fb, err)
		}
	}
	if err := s.Append(ctx, "s", entries("s", "r", 1, 1)...); err != nil {
		t.Fatalf("a deleted session starts again at seq 1: %v", err)
	}
}

// A real loop run on the store, then a second run continuing the session: the history
// is the model's, and event seqs continue gaplessly across the runs.
func loopRuns(t *testing.T, s loop.SessionStore) {
	m := looptest.NewModel(looptest.Turn{Text: "first answer"}, looptest.Turn{Text: "second answer"})
	a, err := loop.New(loop.Config{Name: "conformance", SystemPrompt: "Be brief.", Model: m, Store: s})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var seqs []int64
	for i, q := range []string{"one", "two"} {
		res, err := a.RunWith(ctx, loop.RunInput{SessionID: "conv", Messages: []loop.Message{loop.UserMessage(q)}}, func(e loop.Event) { seqs = append(seqs, e.Seq) })
		if err != nil || res.Status != loop.StatusCompleted {
			t.Fatalf("run %d: %s %v", i, res.Status, err)
		}
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Fatalf("event seqs not gapless across runs: %v", seqs)
		}
	}
	last := m.Requests()[1].Messages
	if len(last) != 4 || last[0].Text() != "Be brief." || last[3].Text() != "two" {
		t.Fatalf("the second run's model input: %+v", last)
	}
	rs, err := s.Runs(ctx, "conv")
	if err != nil || len(rs) != 2 || rs[0].Status != loop.StatusCompleted || rs[1].Status != loop.StatusCompleted {
		t.Fatalf("runs %+v %v", rs, err)
	}
}

// appendRun: a RunAppender saves the run record and appends in one transaction, so a
// refused append keeps the record out too. (A store that is no RunAppender passes.)
func appendRun(t *testing.T, s loop.SessionStore) {
	ra, ok := s.(loop.RunAppender)
	if !ok {
		return
	}
	ctx := context.Background()
	rec := loop.RunRecord{ID: "r1", SessionID: "s", Started: t0, Status: loop.StatusCompleted, Reason: loop.ReasonEndTurn}
	if err := ra.AppendRun(ctx, rec, entries("s", "r1", 1, 2)...); err != nil {
		t.Fatal(err)
	}
	if err := ra.AppendRun(ctx, loop.RunRecord{ID: "r0", SessionID: "s", Started: t0}); err != nil {
		t.Fatalf("a record alone: %v", err)
	}
	rec.ID = "r2"
	if err := ra.AppendRun(ctx, rec, entries("s", "r2", 5, 1)...); err == nil || !strings.Contains(err.Error(), "append seq 5, want 3") {
		t.Fatalf("a gap: got %v", err)
	}
	got, err := s.Runs(ctx, "s")
	if err != nil || len(got) != 2 || got[0].ID != "r0" || got[1].ID != "r1" || got[1].Status != loop.StatusCompleted {
		t.Fatalf("runs %+v %v: the refused append's record was kept", got, err)
	}
	if es, _ := s.Load(ctx, "s"); len(es) != 2 {
		t.Fatalf("%d entries", len(es))
	}

	// A Leaser's final record releases the run's lease; a start record keeps it.
	ls, ok := s.(loop.Leaser)
	if !ok {
		return
	}
	alive := func(loop.Lease) bool { return true }
	mine, other := lease("l", "r1", 1), lease("l", "r2", 2)
	if _, err := ls.AcquireLease(ctx, mine, alive); err != nil {
		t.Fatal(err)
	}
	if err := ra.AppendRun(ctx, loop.RunRecord{ID: "r1", SessionID: "l", Started: t0}, entries("l", "r1", 1, 1)...); err != nil {
		t.Fatal(err)
	}
	if _, err := ls.AcquireLease(ctx, other, alive); !errors.Is(err, loop.ErrSessionBusy) {
		t.Fatalf("after the start record: %v, want the lease still held", err)
	}
	final := loop.RunRecord{ID: "r1", SessionID: "l", Started: t0, Status: loop.StatusCompleted, Reason: loop.ReasonEndTurn}
	if err := ra.AppendRun(ctx, final, entries("l", "r1", 2, 1)...); err != nil {
		t.Fatal(err)
	}
	if _, err := ls.AcquireLease(ctx, other, alive); err != nil {
		t.Fatalf("after the final record: %v, want the lease released", err)
	}
}

// feedbackKept: feedback on runs is listed from a time on, oldest first, each as given;
// a store without feedback is not held to it.
func feedbackKept(t *testing.T, s loop.SessionStore) {
	fs, ok := s.(loop.FeedbackStore)
	if !ok {
		t.Fatal("the store keeps no feedback (loop.FeedbackStore)")
	}
	ctx := context.Background()
	in := []loop.Feedback{
		{SessionID: "s1", RunID: "r1", Agent: "a", Score: -1, Comment: "wrong ✗", Time: t0},
		{SessionID: "s1", RunID: "r1", Agent: "a", Score: 1, Time: t0.Add(500 * time.Millisecond)},
		{SessionID: "s2", RunID: "r1", Agent: "b", Score: 5, Comment: "great", Time: t0.Add(time.Second)},
	}
	for _, f := range []int{2, 0, 1} { // stored out of order: listed by time
		if err := fs.AddFeedback(ctx, in[f]); err != nil {
			t.Fatal(err)
		}
	}
	got, err := fs.Feedback(ctx, t0)
	if err != nil || len(got) != 3 {
		t.Fatalf("feedback %v %v", got, err)
	}
	for i := range in {
		if !got[i].Time.Equal(in[i].Time) {
			t.Fatalf("feedback %d time %v, want %v", i, got[i].Time, in[i].Time)
		}
		got[i].Time = in[i].Time
		if got[i] != in[i] {
			t.Fatalf("feedback %d = %+v, want %+v", i, got[i], in[i])
		}
	}
	if got, err = fs.Feedback(ctx, t0.Add(400*time.Millisecond)); err != nil || len(got) != 2 || got[0].Score != 1 {
		t.Fatalf("feedback since +400ms: %+v %v", got, err)
	}
}
