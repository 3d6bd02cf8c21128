package store

import (
	"context"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// projectedEntries decodes a session's chunks straight from the file.
func projectedEntries(t *testing.T, s *SQLite, session string) (es []loop.Entry, lastSeq int64) {
	t.Helper()
	rows, err := s.db.Query(`SELECT last_seq, body FROM transcripts WHERE sid = (SELECT sid FROM session_keys WHERE id = ?) ORDER BY chunk`, session)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&lastSeq, &b); err != nil {
			t.Fatal(err)
		}
		if es, err = decodeChunk(b, es); err != nil {
			t.Fatal(err)
		}
	}
	return es, lastSeq
}

// appendOneByOne appends es one entry a write, as a run's steps do.
func appendOneByOne(t *testing.T, s *SQLite, session string, es []loop.Entry) {
	t.Helper()
	for i := range es {
		if err := s.Append(context.Background(), session, es[i]); err != nil {
			t.Fatal(err)
		}
	}
}

// Writes that leave fewer than lagMin transcript entries outside the projection do not
// write it (a short session never does), and a cold start, by LoadHead or by the
// claim's one statement, reads the head from the entries exactly, without rebuilding.
func TestTranscriptProjectionIsNotWrittenBelowLagMin(t *testing.T) {
	s := open(t)
	var log logTo
	s.SetLogger(slog.New(slog.NewTextHandler(&log, nil)))
	es := chat("l", 1, (lagMin-1)/4, "w") // 1 + 4 × 3 = 13 messages
	appendOneByOne(t, s, "l", es)
	if n := len(loop.HeadOf(es).Transcript); n >= lagMin {
		t.Fatalf("%d transcript entries: the test needs fewer than %d", n, lagMin)
	}
	if n := chunkRows(t, s, "l"); n != 0 {
		t.Fatalf("%d chunks written below lagMin", n)
	}
	want := wantHead(t, s, "l")
	sameHead(t, coldHead(t, s, "l"), want)
	s.heads.Drop("l")
	cs, err := s.ClaimState(context.Background(), "l", "run-x")
	if err != nil || cs.Head == nil {
		t.Fatalf("claim state: %v, head %v", err, cs.Head)
	}
	sameHead(t, *cs.Head, want)
	if n := chunkRows(t, s, "l"); n != 0 || log.String() != "" {
		t.Fatalf("%d chunks after cold reads of a short session; log %q", n, log.String())
	}
}

// The write that brings the pending transcript entries to lagMin extends the projection
// with all of them (the pending ones decoded from their rows), in its transaction: the
// chunks then hold the whole transcript, ending at that write's last message.
func TestTranscriptProjectionIsExtendedAtLagMin(t *testing.T) {
	s := open(t)
	es := chat("m", 1, lagMin/4, "w") // 1 + 16 messages: the 16th is es' second-last message
	var k, n int                      // k: entries before the write of the lagMin-th message
	for k = range es {
		if isTranscript(&es[k]) {
			if n++; n == lagMin {
				break
			}
		}
	}
	appendOneByOne(t, s, "m", es[:k])
	if got := chunkRows(t, s, "m"); got != 0 {
		t.Fatalf("%d chunks at %d transcript entries", got, lagMin-1)
	}
	appendOneByOne(t, s, "m", es[k:k+1])
	got, last := projectedEntries(t, s, "m")
	want := wantHead(t, s, "m")
	if last != es[k].Seq || !reflect.DeepEqual(got, want.Transcript) {
		t.Fatalf("projection ends at %d with %d entries; want %d with %d", last, len(got), es[k].Seq, len(want.Transcript))
	}
	// The rest (an event, then a message) stays out of it, and the cold reads agree.
	appendOneByOne(t, s, "m", es[k+1:])
	if got, _ := projectedEntries(t, s, "m"); len(got) != lagMin {
		t.Fatalf("%d entries projected after one more message, want %d", len(got), lagMin)
	}
	want = wantHead(t, s, "m")
	sameHead(t, coldHead(t, s, "m"), want)
	s.heads.Drop("m")
	cs, err := s.ClaimState(context.Background(), "m", "run-x")
	if err != nil || cs.Head == nil {
		t.Fatalf("claim state: %v, head %v", err, cs.Head)
	}
	sameHead(t, *cs.Head, want)
}

// Hostile: a pending row that does not decode (damaged in the file) does not fail the
// write that would extend the projection: the write lands, the projection is not
// extended, and the read reports the damaged entry as it would without a projection.
func TestTranscriptPendingRowThatDoesNotDecodeLeavesTheWriteStanding(t *testing.T) {
	s := open(t)
	es := chat("c", 1, 2, "w") // 9 messages
	appendOneByOne(t, s, "c", es)
	if _, err := s.db.Exec(`UPDATE entries SET body = x'7b7b' WHERE session = 'c' AND seq = 1`); err != nil {
		t.Fatal(err)
	}
	more := chat("c", int64(len(es)+1), 2, "x") // 8 more: 17 pending at the last
	if err := s.Append(context.Background(), "c", more...); err != nil {
		t.Fatalf("the write failed on an earlier entry: %v", err)
	}
	if n := chunkRows(t, s, "c"); n != 0 {
		t.Fatalf("%d chunks from a transcript with a damaged entry", n)
	}
	s.heads.Drop("c")
	if _, err := s.LoadHead(context.Background(), "c"); err == nil || !strings.Contains(err.Error(), "entry 1") {
		t.Fatalf("damaged entry not reported: %v", err)
	}
}
