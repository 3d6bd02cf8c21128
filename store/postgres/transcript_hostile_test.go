package postgres

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/store"
	"github.com/agenthost/agenthost/store/pgtest"
	"github.com/agenthost/agenthost/store/seal"
)

func chunkBody(t testing.TB, s *Store, session string, chunk int) []byte {
	t.Helper()
	var b []byte
	if err := s.db.pool.QueryRow(context.Background(), `SELECT body FROM transcripts WHERE session = $1 AND chunk = $2`, session, chunk).Scan(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

func exec(t testing.TB, s *Store, q string, args ...any) {
	t.Helper()
	if _, err := s.db.pool.Exec(context.Background(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// checkRebuilt: the session's projection decodes and ends on its last transcript row.
func checkRebuilt(t testing.TB, s *Store, session string) {
	t.Helper()
	n, last := projection(t, s, session)
	if n == 0 || last != lastTranscriptSeq(t, s, session) {
		t.Fatalf("not rebuilt: %d chunks ending at %d", n, last)
	}
	for i := range n {
		plain, err := s.keys.Open(chunkBody(t, s, session, i), store.TranscriptAAD(session, int64(i)))
		if err != nil {
			t.Fatalf("rebuilt chunk %d: %v", i, err)
		}
		if _, err := store.DecodeTranscriptChunk(plain, nil); err != nil {
			t.Fatalf("rebuilt chunk %d: %v", i, err)
		}
	}
}

func crc(b []byte) []byte {
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(b[8:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// Hostile: a projection damaged in the database (truncated, empty, a bad checksum, text
// that is not UTF-8 under a right checksum, a chunk of another session (that ends
// elsewhere: a plain store binds chunks to their session no more than its entries; a
// sealed one does, TestTranscriptProjectionIsSealedWhereEntriesAre), a chunk missing,
// a projection ahead of the entries, one that lost an entry but still ends where they
// do) is reported and the head read from the entries, never a panic; the projection is
// rebuilt. The triggers are off while it is damaged, as a hand editing the table would
// leave it.
func TestTranscriptProjectionThatDisagreesFallsBackToTheEntries(t *testing.T) {
	s := open(t, pgtest.Start(t).NewDatabase(t))
	if err := s.Append(context.Background(), "other", chat("other", 1, 5, "other")...); err != nil {
		t.Fatal(err)
	}
	damage := map[string]func(good []byte){
		"truncated":    func(good []byte) { setChunk(t, s, 0, good[:len(good)/2]) },
		"empty":        func([]byte) { setChunk(t, s, 0, []byte{}) },
		"bad checksum": func(good []byte) { setChunk(t, s, 0, append(bytes.Clone(good[:len(good)-1]), good[len(good)-1]^1)) },
		"invalid UTF-8": func(good []byte) {
			setChunk(t, s, 0, crc(bytes.Replace(bytes.Clone(good), []byte("v 3: 2+3?"), []byte("v 3: 2+3\xff"), 1)))
		},
		"another session's chunk": func([]byte) {
			setChunk(t, s, 0, chunkBody(t, s, "other", 0))
		},
		"chunk 0 missing": func([]byte) { exec(t, s, `DELETE FROM transcripts WHERE session = 'v' AND chunk = 0`) },
		"ahead of the entries": func([]byte) {
			exec(t, s, `ALTER TABLE entries DISABLE TRIGGER transcripts_entry_deleted`)
			defer exec(t, s, `ALTER TABLE entries ENABLE TRIGGER transcripts_entry_deleted`)
			exec(t, s, `DELETE FROM entries WHERE session = 'v' AND seq > (SELECT MAX(last_seq) FROM transcripts WHERE session = 'v') - 30`)
		},
		"an entry lost, the end kept": func([]byte) {
			h := wantHead(t, s, "v")
			_, last := projection(t, s, "v")
			var tr = h.Transcript[:0:0]
			for i, e := range h.Transcript {
				if i != 3 && e.Seq <= last {
					tr = append(tr, e)
				}
			}
			chunks, err := store.BuildTranscriptChunks(tr)
			if err != nil {
				t.Fatal(err)
			}
			exec(t, s, `DELETE FROM transcripts WHERE session = 'v'`)
			for i, c := range chunks {
				exec(t, s, `INSERT INTO transcripts (session, chunk, last_seq, body) VALUES ('v', $1, $2, $3)`, i, c.Last, c.Body)
			}
		},
	}
	for name, hurt := range damage {
		t.Run(name, func(t *testing.T) {
			exec(t, s, `DELETE FROM entries WHERE session = 'v'`)
			appendRuns(t, s, "v", 20, "v")
			if n, _ := projection(t, s, "v"); n < 2 {
				t.Fatalf("%d chunks, want several", n)
			}
			hurt(chunkBody(t, s, "v", 0))
			log := logged(s)
			sameHead(t, coldHead(t, s, "v"), wantHead(t, s, "v"))
			if !strings.Contains(log.String(), "transcript projection disagrees with its entries") {
				t.Fatalf("not reported: %q", log)
			}
			checkRebuilt(t, s, "v")
			log = logged(s)
			sameHead(t, coldHead(t, s, "v"), wantHead(t, s, "v"))
			if log.String() != "" {
				t.Fatalf("the rebuilt projection disagreed: %s", log)
			}
		})
	}
}

func setChunk(t testing.TB, s *Store, chunk int, b []byte) {
	t.Helper()
	exec(t, s, `ALTER TABLE entries DISABLE TRIGGER transcripts_entry_updated`)
	defer exec(t, s, `ALTER TABLE entries ENABLE TRIGGER transcripts_entry_updated`)
	exec(t, s, `UPDATE transcripts SET body = $1 WHERE session = 'v' AND chunk = $2`, b, chunk)
}

// A session deleted and written again (by this process or another, or by SQL) has no
// projection of its old entries: the delete drops it in the same transaction, and the
// new entries are projected afresh. A session stored without one (before migration 15)
// gets one at its first cold read.
func TestTranscriptProjectionIsDroppedWithItsEntries(t *testing.T) {
	url := pgtest.Start(t).NewDatabase(t)
	a, b := open(t, url), open(t, url)
	ctx := context.Background()
	appendRuns(t, a, "d", 10, "old")
	sameHead(t, coldHead(t, a, "d"), wantHead(t, a, "d"))
	if err := b.DeleteSession(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	if n, _ := projection(t, a, "d"); n != 0 {
		t.Fatalf("DeleteSession left %d chunks", n)
	}
	appendRuns(t, b, "d", 5, "new")
	h := coldHead(t, a, "d")
	sameHead(t, h, wantHead(t, a, "d"))
	for _, e := range h.Transcript {
		if strings.Contains(e.Message.Text(), "old") {
			t.Fatalf("an old message came back: %q", e.Message.Text())
		}
	}
	exec(t, a, `DELETE FROM entries WHERE session = 'd' AND seq > 3`)
	if n, _ := projection(t, a, "d"); n != 0 {
		t.Fatalf("a DELETE of entries left %d chunks", n)
	}
	appendRuns(t, a, "d", 5, "again")
	exec(t, a, `TRUNCATE entries`)
	if n, _ := projection(t, a, "d"); n != 0 {
		t.Fatalf("TRUNCATE left %d chunks", n)
	}
	appendRuns(t, a, "d", 6, "fresh")
	exec(t, a, `DELETE FROM transcripts`) // as a store from before migration 15 has it
	log := logged(a)
	sameHead(t, coldHead(t, a, "d"), wantHead(t, a, "d"))
	checkRebuilt(t, a, "d")
	if log.String() != "" {
		t.Fatalf("an absent projection was reported: %s", log)
	}
}

// A kill in the middle of an append that extends the projection (the server ends the
// backend while it writes the chunk) takes the append's entries with it: the session is
// as before, its projection too, and they agree.
func TestAKillMidWriteLeavesTheProjectionAndTheEntriesAgreeing(t *testing.T) {
	s := open(t, pgtest.Start(t).NewDatabase(t))
	ctx := context.Background()
	appendRuns(t, s, "k", 6, "before")
	entriesBefore, _ := s.Load(ctx, "k")
	chunksBefore, lastBefore := projection(t, s, "k")
	exec(t, s, `CREATE FUNCTION stall() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(60); RETURN NEW; END $$`)
	exec(t, s, `CREATE TRIGGER stall BEFORE INSERT OR UPDATE ON transcripts FOR EACH ROW EXECUTE FUNCTION stall()`)
	done := make(chan error, 1)
	go func() { done <- s.Append(ctx, "k", chat("k", int64(len(entriesBefore))+1, 5, "killed")...) }()
	killer := open(t, s.db.pool.Config().ConnString())
	deadline := time.Now().Add(30 * time.Second)
	for killed := false; !killed; {
		if time.Now().After(deadline) {
			t.Fatal("the append never reached the projection's write")
		}
		if err := killer.db.pool.QueryRow(ctx, `SELECT COUNT(pg_terminate_backend(pid)) > 0 FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND query LIKE '%transcripts%'`).Scan(&killed); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond) // polling for the append to reach the chunk
	}
	if err := <-done; err == nil {
		t.Fatal("the killed append succeeded")
	}
	exec(t, killer, `DROP TRIGGER stall ON transcripts`)
	after, err := killer.Load(ctx, "k")
	if err != nil || len(after) != len(entriesBefore) {
		t.Fatalf("after the kill: %d entries (%v), want %d", len(after), err, len(entriesBefore))
	}
	if n, last := projection(t, killer, "k"); n != chunksBefore || last != lastBefore {
		t.Fatalf("projection after the kill: %d chunks to %d, before %d to %d", n, last, chunksBefore, lastBefore)
	}
	log := logged(killer)
	sameHead(t, coldHead(t, killer, "k"), wantHead(t, killer, "k"))
	if log.String() != "" {
		t.Fatalf("the projection disagreed after the kill: %s", log)
	}
	appendRuns(t, killer, "k", 5, "after") // and the session goes on
	sameHead(t, coldHead(t, killer, "k"), wantHead(t, killer, "k"))
}

// Sealed store: the chunks are sealed as the entries are (no message text, and no
// chunk header, in clear in the table), bound to their session and place, and a Reseal
// leaves none under a retired key.
func TestTranscriptProjectionIsSealedWhereEntriesAre(t *testing.T) {
	url := pgtest.Start(t).NewDatabase(t)
	k1, _ := seal.NewKey()
	s := openKeyed(t, url, ring(t, k1))
	appendRuns(t, s, "z", 12, "zanzibar")
	if n, _ := projection(t, s, "z"); n == 0 {
		t.Fatal("not projected")
	}
	var clear, sealed int
	if err := s.db.pool.QueryRow(context.Background(), `SELECT COUNT(*) FILTER (WHERE position('zanzibar' in encode(body, 'escape')) > 0 OR position('AHT1' in encode(body, 'escape')) > 0),
		COUNT(*) FILTER (WHERE starts_with(encode(body, 'escape'), '"ahe1:')) FROM transcripts`).Scan(&clear, &sealed); err != nil {
		t.Fatal(err)
	}
	if clear != 0 || sealed == 0 {
		t.Fatalf("%d chunks in clear, %d sealed", clear, sealed)
	}
	log := logged(s)
	sameHead(t, coldHead(t, s, "z"), wantHead(t, s, "z"))
	if log.String() != "" {
		t.Fatalf("a sealed projection was reported: %s", log)
	}
	// A chunk of another session of the same shape opens only for its own.
	appendRuns(t, s, "y", 12, "yokohama")
	exec(t, s, `ALTER TABLE entries DISABLE TRIGGER transcripts_entry_updated`)
	exec(t, s, `UPDATE transcripts SET body = (SELECT body FROM transcripts WHERE session = 'y' AND chunk = 0) WHERE session = 'z' AND chunk = 0`)
	exec(t, s, `ALTER TABLE entries ENABLE TRIGGER transcripts_entry_updated`)
	sameHead(t, coldHead(t, s, "z"), wantHead(t, s, "z"))
	if !strings.Contains(log.String(), "does not open") {
		t.Fatalf("another session's chunk was not reported: %q", log)
	}
	// A new key first: Reseal re-seals every entry (dropping the projection) and leaves
	// no chunk under the old key, even one written after the entries were resealed.
	k2, _ := seal.NewKey()
	s2 := openKeyed(t, url, ring(t, k2, k1))
	old := chunkBody(t, s, "z", 0)
	if _, err := s2.Reseal(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, _ := projection(t, s2, "z"); n != 0 {
		t.Fatalf("%d chunks survived the reseal", n)
	}
	exec(t, s2, `INSERT INTO transcripts (session, chunk, last_seq, body) VALUES ('z', 0, 1, $1)`, old)
	if _, err := s2.Reseal(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, _ := projection(t, s2, "z"); n != 0 {
		t.Fatalf("a chunk under the retired key survived the reseal")
	}
	sameHead(t, coldHead(t, s2, "z"), wantHead(t, s2, "z"))
	checkRebuilt(t, s2, "z")
	if id, _ := seal.Sealed(chunkBody(t, s2, "z", 0)); id != ring(t, k2).Current() {
		t.Fatalf("rebuilt under key %q", id)
	}
	if _, err := s2.keys.Open(chunkBody(t, s2, "z", 0), store.TranscriptAAD("y", 0)); err == nil {
		t.Fatal("a chunk opens for another session")
	}
}
