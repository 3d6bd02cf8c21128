package postgres

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store"
	"github.com/agenthost/agenthost/store/pgtest"
	"github.com/agenthost/agenthost/store/storetest"
)

// chat is runs one-step runs' entries from seq from (with a system message at 1): five
// messages and sixteen events a run, word in the user's and the answer's text.
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
		msg(loop.Message{Role: loop.RoleTool, ToolCallID: fmt.Sprintf("call-%d", r), Content: []loop.Part{loop.TextPart("5")}})
		event()
		msg(loop.Message{Role: loop.RoleAssistant, Content: []loop.Part{loop.TextPart(word + " is 5")}, Reasoning: "easy"})
		for range 13 {
			event()
		}
	}
	return es
}

// appendRuns appends runs one-step runs to session after what it holds, one append a run.
func appendRuns(t testing.TB, s *Store, session string, runs int, word string) {
	t.Helper()
	ctx := context.Background()
	var last int64
	if err := s.db.pool.QueryRow(ctx, `SELECT COALESCE(MAX(seq), 0) FROM entries WHERE session = $1`, session).Scan(&last); err != nil {
		t.Fatal(err)
	}
	es := chat(session, last+1, runs, word)
	for len(es) > 0 {
		n := 21
		if es[0].Seq == 1 {
			n = 22
		}
		n = min(n, len(es))
		if err := s.Append(ctx, session, es[:n]...); err != nil {
			t.Fatal(err)
		}
		es = es[n:]
	}
}

// coldHead is LoadHead with no head kept: what the first run since the process started reads.
func coldHead(t testing.TB, s *Store, session string) loop.SessionHead {
	t.Helper()
	s.heads.Drop(session)
	h, err := s.LoadHead(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// wantHead is the definition: loop.HeadOf the session's entries.
func wantHead(t testing.TB, s *Store, session string) loop.SessionHead {
	t.Helper()
	es, err := s.Load(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	return loop.HeadOf(es)
}

func sameHead(t testing.TB, got, want loop.SessionHead) {
	t.Helper()
	got, want = storetest.WithoutMessages(t, got), storetest.WithoutMessages(t, want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("head differs from the entries':\n got %d entries, last %d/%d\nwant %d entries, last %d/%d",
			len(got.Transcript), got.LastSeq, got.LastEventSeq, len(want.Transcript), want.LastSeq, want.LastEventSeq)
	}
}

// projection is the session's chunks: how many, and the seq the last ends at.
func projection(t testing.TB, s *Store, session string) (chunks int, last int64) {
	t.Helper()
	if err := s.db.pool.QueryRow(context.Background(), `SELECT COUNT(*), COALESCE(MAX(last_seq), 0) FROM transcripts WHERE session = $1`, session).Scan(&chunks, &last); err != nil {
		t.Fatal(err)
	}
	return chunks, last
}

// lastTranscriptSeq is the seq of the session's last message or compaction.
func lastTranscriptSeq(t testing.TB, s *Store, session string) int64 {
	t.Helper()
	h := wantHead(t, s, session)
	return h.Transcript[len(h.Transcript)-1].Seq
}

// logTo captures a store's reports.
type logTo struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logTo) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logTo) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func logged(s *Store) *logTo {
	var l logTo
	s.log = slog.New(slog.NewTextHandler(&l, nil))
	return &l
}

// The projection lags: a session whose transcript entries not yet in it stay under
// TranscriptLagMin has none (a one-step run on a new session writes four messages and
// its system prompt), and a write that brings them to it projects them all, so the
// projection always ends on a transcript row.
func TestTranscriptProjectionLagsItsEntriesByFewerThanLagMin(t *testing.T) {
	s := open(t, pgtest.Start(t).NewDatabase(t))
	appendRuns(t, s, "l", 1, "lag")
	if n, _ := projection(t, s, "l"); n != 0 {
		t.Fatalf("a one-step session has %d chunks, want none", n)
	}
	appendRuns(t, s, "l", 2, "lag") // 13 transcript entries: still under 16
	if n, _ := projection(t, s, "l"); n != 0 {
		t.Fatalf("13 pending transcript entries made %d chunks", n)
	}
	appendRuns(t, s, "l", 1, "lag") // 17: projected, to the last message
	if _, last := projection(t, s, "l"); last != lastTranscriptSeq(t, s, "l") {
		t.Fatalf("projection ends at %d, the transcript at %d", last, lastTranscriptSeq(t, s, "l"))
	}
	for range 30 {
		appendRuns(t, s, "l", 1, "lag")
		_, last := projection(t, s, "l")
		h := wantHead(t, s, "l")
		behind := 0
		for _, e := range h.Transcript {
			if e.Seq > last {
				behind++
			}
		}
		if behind >= store.TranscriptLagMin {
			t.Fatalf("the projection is %d transcript entries behind", behind)
		}
	}
	if n, _ := projection(t, s, "l"); n < 2 {
		t.Fatalf("30 more runs fit in %d chunk(s): chunks do not roll over", n)
	}
	log := logged(s)
	sameHead(t, coldHead(t, s, "l"), wantHead(t, s, "l"))
	if log.String() != "" {
		t.Fatalf("a good projection was reported: %s", log)
	}
}

// A cold read takes the messages from the chunks, not from the entries' JSON: with the
// update trigger off, a message changed in its row (a thing no store path does) still
// reads as the projection has it, while the rows after the projection read as stored.
func TestColdReadTakesTheChunksNotTheEntries(t *testing.T) {
	s := open(t, pgtest.Start(t).NewDatabase(t))
	ctx := context.Background()
	appendRuns(t, s, "c", 10, "chunked")
	_, last := projection(t, s, "c")
	if last == 0 {
		t.Fatal("not projected")
	}
	for _, q := range []string{`ALTER TABLE entries DISABLE TRIGGER transcripts_entry_updated`,
		`UPDATE entries SET body = jsonb_set(body, '{message,content,0,text}', '"rewritten"') WHERE session = 'c' AND seq = 2`,
		`ALTER TABLE entries ENABLE TRIGGER transcripts_entry_updated`} {
		if _, err := s.db.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	h := coldHead(t, s, "c")
	if got := h.Transcript[1].Message.Text(); got != "chunked 0: 2+3?" {
		t.Fatalf("the cold read took seq 2 from the entries: %q", got)
	}
	if got := wantHead(t, s, "c").Transcript[1].Message.Text(); got != "rewritten" {
		t.Fatalf("the entry was not changed: %q", got)
	}
}

// Two processes appending to one session (each append under the session's lock, a
// lost race retried with the next seq) leave one projection that agrees with the
// entries.
func TestTwoProcessesAppendingOneSessionLeaveOneProjection(t *testing.T) {
	url := pgtest.Start(t).NewDatabase(t)
	a, b := open(t, url), open(t, url)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, st := range []*Store{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < 15; {
				var last int64
				if err := st.db.pool.QueryRow(ctx, `SELECT COALESCE(MAX(seq), 0) FROM entries WHERE session = 'two'`).Scan(&last); err != nil {
					errs[i] = err
					return
				}
				es := chat("two", last+1, 1, fmt.Sprintf("p%d-%d", i, done))
				err := st.Append(ctx, "two", es...)
				switch {
				case err == nil:
					done++
				case !strings.Contains(err.Error(), "another run writing?"):
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	c := open(t, url) // a third process, started after them
	log := logged(c)
	if _, last := projection(t, c, "two"); last == 0 {
		t.Fatal("not projected")
	}
	sameHead(t, coldHead(t, c, "two"), wantHead(t, c, "two"))
	if log.String() != "" {
		t.Fatalf("the projection disagreed: %s", log)
	}
}

// What JSONB keeps of an entry is what the chunk decodes to, for the strings and times
// JSONB rewrites: invalid UTF-8 (replaced), escapes JSON writes and JSONB does not
// (<, >, &, U+2028), characters outside the BMP, and times in a zone other than UTC.
func TestTranscriptProjectionMatchesWhatJSONBKeeps(t *testing.T) {
	s := open(t, pgtest.Start(t).NewDatabase(t))
	es := chat("u", 1, 4, "odd")
	zone := time.FixedZone("", 5*3600+30*60)
	for i := range es {
		if m := es[i].Message; m != nil && m.Role == loop.RoleUser {
			m.Content = []loop.Part{loop.TextPart("bad \xff\xfe <b>&amp;</b> \u2028 \U0001F600 \"q\" \\")}
			m.Name = "n\xc3"
			es[i].Time = es[i].Time.In(zone)
		}
	}
	if err := s.Append(context.Background(), "u", es...); err != nil {
		t.Fatal(err)
	}
	if _, last := projection(t, s, "u"); last == 0 {
		t.Fatal("not projected")
	}
	log := logged(s)
	sameHead(t, coldHead(t, s, "u"), wantHead(t, s, "u"))
	if log.String() != "" {
		t.Fatalf("reported: %s", log)
	}
}
