package store

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/storetest"
)

// chat is session entries after runs one-step runs from seq 1: the system prompt, then
// per run a user message, the assistant's call, the tool's result, the answer and
// events, as the loop stores them (events are four fifths of the rows).
func chat(session string, from int64, runs int, word string) []loop.Entry {
	var es []loop.Entry
	seq, ev := from, from*4
	at := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	add := func(e loop.Entry) {
		e.Seq, e.RunID, e.Time = seq, fmt.Sprintf("run-%d", seq/10), at.Add(time.Duration(seq)*time.Millisecond)
		seq++
		es = append(es, e)
	}
	msg := func(m loop.Message) { add(loop.Entry{Kind: loop.EntryMessage, Message: &m}) }
	event := func() {
		ev++
		add(loop.Entry{Kind: loop.EntryEvent, Event: &loop.Event{Seq: ev, SessionID: session, Type: loop.EventStatus, Data: loop.StatusData{State: "working"}}})
	}
	if from == 1 {
		msg(loop.Message{Role: loop.RoleSystem, Content: []loop.Part{loop.TextPart("You add numbers.")}})
	}
	for r := range runs {
		msg(loop.UserMessage(fmt.Sprintf("%s %d: 2+3?", word, r)))
		event()
		msg(loop.Message{Role: loop.RoleAssistant, ToolCalls: []loop.ToolCall{{ID: fmt.Sprintf("call-%d", r), Name: "add", Arguments: `{"a":2,"b":3}`}}})
		event()
		event()
		msg(loop.Message{Role: loop.RoleTool, ToolCallID: fmt.Sprintf("call-%d", r), Content: []loop.Part{loop.TextPart("5")}})
		event()
		msg(loop.Message{Role: loop.RoleAssistant, Content: []loop.Part{loop.TextPart(word + " is 5")}, Reasoning: "easy"})
		for range 12 {
			event()
		}
	}
	return es
}

// coldHead is LoadHead as a run's first since the process started: no head kept.
func coldHead(t testing.TB, s *SQLite, session string) loop.SessionHead {
	t.Helper()
	s.heads.Drop(session)
	h, err := s.LoadHead(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// wantHead is the definition: loop.HeadOf the session's entries.
func wantHead(t testing.TB, s *SQLite, session string) loop.SessionHead {
	t.Helper()
	es, err := s.Load(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	return loop.HeadOf(es)
}

func chunkRows(t testing.TB, s *SQLite, session string) int {
	t.Helper()
	var n int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM transcripts WHERE sid = (SELECT sid FROM session_keys WHERE id = ?)`, session).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func sameHead(t testing.TB, got, want loop.SessionHead) {
	t.Helper()
	got, want = storetest.WithoutMessages(t, got), storetest.WithoutMessages(t, want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("head from the projection differs from the entries':\n got %d entries, last %d/%d\nwant %d entries, last %d/%d",
			len(got.Transcript), got.LastSeq, got.LastEventSeq, len(want.Transcript), want.LastSeq, want.LastEventSeq)
	}
}

// logTo captures the store's reports.
type logTo struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logTo) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.Write(p) }
func (l *logTo) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.String() }

func TestTranscriptProjectionIsWrittenWithEachAppendAndReadAtAColdStart(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	es := chat("s", 1, 30, "w")
	// The history in several appends of different sizes, so chunks fill and roll over.
	for i := 0; i < len(es); {
		n := min(1+i%23, len(es)-i)
		if err := s.Append(ctx, "s", es[i:i+n]...); err != nil {
			t.Fatal(err)
		}
		i += n
	}
	if n := chunkRows(t, s, "s"); n < 2 {
		t.Fatalf("%d chunks: the appends did not roll over to a new chunk", n)
	}
	var log logTo
	s.SetLogger(slog.New(slog.NewTextHandler(&log, nil)))
	sameHead(t, coldHead(t, s, "s"), wantHead(t, s, "s"))
	if log.String() != "" {
		t.Fatalf("a projection that agrees was reported: %s", log.String())
	}
	// Appended to after a cold read: the kept head and a second cold read agree.
	more := chat("s", int64(len(es)+1), 2, "x")
	if err := s.Append(ctx, "s", more...); err != nil {
		t.Fatal(err)
	}
	h, err := s.LoadHead(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	sameHead(t, h, wantHead(t, s, "s"))
	sameHead(t, coldHead(t, s, "s"), wantHead(t, s, "s"))
}

// Compactions are projected and applied by the loop as from the entries: what the head
// holds is the whole transcript, compactions in their place.
func TestTranscriptProjectionKeepsCompactions(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	es := chat("c", 1, 3, "before")
	last := es[len(es)-1].Seq
	comp := []loop.Entry{
		{Seq: last + 1, Kind: loop.EntryCompaction, Time: time.Unix(1, 5).In(time.FixedZone("", 3600)),
			Compaction: &loop.Compaction{Replace: 6, Summary: []loop.Message{{Role: loop.RoleUser, Content: []loop.Part{loop.TextPart("summary")}}}}},
		{Seq: last + 2, Kind: loop.EntryCompaction, Compaction: &loop.Compaction{Replace: 0, Summary: []loop.Message{}}},
		{Seq: last + 3, Kind: loop.EntryCompaction, Compaction: &loop.Compaction{Replace: 1}},
	}
	if err := s.Append(ctx, "c", append(es, comp...)...); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "c", chat("c", last+4, 1, "after")...); err != nil {
		t.Fatal(err)
	}
	h := coldHead(t, s, "c")
	sameHead(t, h, wantHead(t, s, "c"))
	if chunkRows(t, s, "c") == 0 {
		t.Fatal("no projection")
	}
	if c := h.Transcript[13].Compaction; c == nil || c.Replace != 6 || c.Summary[0].Text() != "summary" {
		t.Fatalf("compaction: %+v", h.Transcript[13])
	}
}

// A session stored before the projection (or whose projection was dropped) is read
// from its entries and projected then; the next cold start reads the projection.
func TestTranscriptProjectionIsRebuiltWhereAbsent(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	if err := s.Append(ctx, "old", chat("old", 1, 20, "w")...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(`DELETE FROM transcripts`); err != nil {
		t.Fatal(err)
	}
	// An append to a session without a projection does not start one half-way.
	if err := s.Append(ctx, "old", chat("old", 402, 1, "x")...); err != nil {
		t.Fatal(err)
	}
	if n := chunkRows(t, s, "old"); n != 0 {
		t.Fatalf("%d chunks projected of a session without a projection", n)
	}
	sameHead(t, coldHead(t, s, "old"), wantHead(t, s, "old"))
	if n := chunkRows(t, s, "old"); n == 0 {
		t.Fatal("not rebuilt")
	}
	var fromChunks int
	var body []byte
	s.db.QueryRow(`SELECT body FROM transcripts WHERE sid = (SELECT sid FROM session_keys WHERE id = 'old') AND chunk = 0`).Scan(&body)
	if es, err := decodeChunk(body, nil); err != nil || len(es) == 0 {
		t.Fatalf("rebuilt chunk: %d entries, %v", len(es), err)
	} else {
		fromChunks = len(es)
	}
	sameHead(t, coldHead(t, s, "old"), wantHead(t, s, "old"))
	t.Logf("first chunk holds %d entries", fromChunks)
}

// The triggers: a session deleted, or an entry rewritten (a reseal), takes the
// projection with it in the same transaction.
func TestTranscriptProjectionIsDroppedWithItsEntries(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		if err := s.Append(ctx, id, chat(id, 1, 2, "w")...); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteSession(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if n := chunkRows(t, s, "a"); n != 0 {
		t.Fatalf("%d chunks left of a deleted session", n)
	}
	if _, err := s.db.Exec(`UPDATE entries SET time = time WHERE session = 'b' AND seq = 1`); err != nil {
		t.Fatal(err)
	}
	if n := chunkRows(t, s, "b"); n != 0 {
		t.Fatalf("%d chunks left after an entry was rewritten", n)
	}
	sameHead(t, coldHead(t, s, "b"), wantHead(t, s, "b"))
}

// Rule L21: a writer killed (SIGKILL) at any point of its appends leaves the projection
// and the entries agreeing: the projection is written in the entries' transaction. The
// writer is sqlite_test.go's crashWriter.
func TestL21_AKillMidWriteLeavesTheProjectionAndTheEntriesAgreeing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crash.db")
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), writerEnv+"="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 6)
		if _, err := out.Read(buf); err != nil || string(buf) != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("writer did not start: %q %v", buf, err)
		}
		time.Sleep(time.Duration(round*11) * time.Millisecond) // kill at different points
		cmd.Process.Kill()
		cmd.Wait()

		s, err := OpenSQLite(path)
		if err != nil {
			t.Fatal(err)
		}
		var log logTo
		s.SetLogger(slog.New(slog.NewTextHandler(&log, nil)))
		// Straight from the file: the chunks decode and hold exactly the entries.
		var projected []loop.Entry
		rows, err := s.db.Query(`SELECT body FROM transcripts WHERE sid = (SELECT sid FROM session_keys WHERE id = 'crash') ORDER BY chunk`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var b []byte
			rows.Scan(&b)
			if projected, err = decodeChunk(b, projected); err != nil {
				t.Fatalf("round %d: chunk after kill: %v", round, err)
			}
		}
		rows.Close()
		// The projection lags: a prefix of the transcript, fewer than lagMin short of it.
		want := wantHead(t, s, "crash")
		if len(want.Transcript) < 100 || len(projected) > len(want.Transcript) || len(want.Transcript)-len(projected) >= lagMin ||
			!reflect.DeepEqual(projected, want.Transcript[:len(projected)]) {
			t.Fatalf("round %d: %d entries projected, %d stored", round, len(projected), len(want.Transcript))
		}
		sameHead(t, coldHead(t, s, "crash"), want)
		if log.String() != "" {
			t.Fatalf("round %d: %s", round, log.String())
		}
		s.db.Exec(`DELETE FROM entries`)
		s.Close()
	}
}

// A session whose first writes hold only events starts its projection with its first
// message, at the append that brings lagMin transcript entries.
func TestTranscriptProjectionStartsWithASessionsFirstMessage(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	es := chat("e", 1, 1, "w")
	events := []loop.Entry{es[2]}
	events[0].Seq = 1
	if err := s.Append(ctx, "e", events...); err != nil {
		t.Fatal(err)
	}
	if n := chunkRows(t, s, "e"); n != 0 {
		t.Fatalf("%d chunks for events", n)
	}
	msgs := chat("e", 2, lagMin/4, "w") // lagMin messages
	if err := s.Append(ctx, "e", msgs...); err != nil {
		t.Fatal(err)
	}
	if n := chunkRows(t, s, "e"); n != 1 {
		t.Fatalf("%d chunks after the first messages, want 1", n)
	}
	sameHead(t, coldHead(t, s, "e"), wantHead(t, s, "e"))
}
