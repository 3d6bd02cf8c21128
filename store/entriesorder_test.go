package store

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// v15DB is a database at schema 15 (entries keyed by (session, seq) in a WITHOUT ROWID
// table) holding sessions b and a, two entries each.
func v15DB(t *testing.T) string {
	t.Helper()
	db, path := dbAtSchema(t, 15)
	defer db.Close()
	for _, session := range []string{"b", "a"} {
		for _, e := range []loop.Entry{msgEntry(1, session+" one"), msgEntry(2, session+" two")} {
			body, _ := json.Marshal(e)
			if _, err := db.Exec(`INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?)`, session, e.Seq, e.RunID, e.Time.Format(time.RFC3339Nano), string(e.Kind), body); err != nil {
				t.Fatal(err)
			}
		}
	}
	return path
}

// rowids are the rowids of a session's entries in seq order.
func rowids(t *testing.T, s *SQLite, session string) []int64 {
	t.Helper()
	rows, err := s.db.Query(`SELECT rowid FROM entries WHERE session = ? ORDER BY seq`, session)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	return out
}

// Entries are kept in the order they were appended (migration 16): a session written
// after others has its rows after theirs, whatever its id sorts as, so a write fills
// the table's last leaf instead of rebalancing one in the middle. A file at schema 15
// migrates with every entry, (session, seq) stays unique, and reads by session and seq
// (Load, LoadHead) find what they found.
func TestEntriesAreKeptInAppendOrder(t *testing.T) {
	s, err := OpenSQLite(v15DB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if v := userVersion(t, s); v != schemaVersion {
		t.Fatalf("user_version %d, want %d", v, schemaVersion)
	}
	for _, session := range []string{"a", "b"} {
		es, err := s.Load(ctx, session)
		if err != nil || len(es) != 2 || es[0].Message.Text() != session+" one" || es[1].Message.Text() != session+" two" {
			t.Fatalf("%s after migration: %+v %v", session, es, err)
		}
	}
	// A session whose id sorts first, written last, goes after every row there is.
	if err := s.Append(ctx, "0", msgEntry(1, "new one"), msgEntry(2, "new two")); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "a", msgEntry(3, "a three")); err != nil {
		t.Fatal(err)
	}
	a, b, zero := rowids(t, s, "a"), rowids(t, s, "b"), rowids(t, s, "0")
	if len(a) != 3 || len(b) != 2 || len(zero) != 2 {
		t.Fatalf("rowids: a %v b %v 0 %v", a, b, zero)
	}
	if !(max(a[1], b[1]) < zero[0] && zero[0] < zero[1] && zero[1] < a[2]) {
		t.Fatalf("not in append order: a %v b %v 0 %v", a, b, zero)
	}
	h, err := s.LoadHead(ctx, "a")
	if err != nil || len(h.Transcript) != 3 || h.LastSeq != 3 || h.Transcript[2].Message.Text() != "a three" {
		t.Fatalf("head of a: %+v %v", h, err)
	}
	// (session, seq) is still one row (keyed (sid, seq) since migration 17).
	e := msgEntry(2, "again")
	body, _ := json.Marshal(e)
	_, err = s.db.Exec(`INSERT INTO entries (sid, session, seq, run_id, time, kind, body) VALUES ((SELECT sid FROM session_keys WHERE id = 'a'), 'a', 2, 'r1', '', 'message', ?)`, body)
	if err == nil || !strings.Contains(err.Error(), "UNIQUE") {
		t.Fatalf("a second row at (a, 2): %v", err)
	}
	var n int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM sqlite_schema WHERE name = 'runs_by_session'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("runs_by_session still there: %d %v", n, err)
	}
}

// An append is inserted rowsPerInsert entries a statement: one longer than several
// statements' worth lands whole and in order, and one with a gap past the first
// statement's rows lands not at all.
func TestAnAppendOfManyEntriesIsInsertedWholeOrNotAtAll(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	n := 2*rowsPerInsert + 3
	var es []loop.Entry
	for i := range n {
		es = append(es, msgEntry(int64(i+1), "m"+string(rune('a'+i%26))))
	}
	if err := s.Append(ctx, "s", es...); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(ctx, "s")
	if err != nil || len(got) != n {
		t.Fatalf("%d entries, %v", len(got), err)
	}
	for i, e := range got {
		if e.Seq != int64(i+1) || e.Message.Text() != es[i].Message.Text() {
			t.Fatalf("entry %d: %+v", i, e)
		}
	}
	gap := []loop.Entry{}
	for i := range rowsPerInsert + 2 {
		seq := int64(n + 1 + i)
		if i == rowsPerInsert+1 {
			seq++ // the gap, in the second statement's rows
		}
		gap = append(gap, msgEntry(seq, "late"))
	}
	if err := s.Append(ctx, "s", gap...); err == nil || !strings.Contains(err.Error(), "want") {
		t.Fatalf("append with a gap: %v", err)
	}
	if got, _ := s.Load(ctx, "s"); len(got) != n {
		t.Fatalf("after the refused append: %d entries, want %d", len(got), n)
	}
}
