package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// v16DB is a database at schema 16 (entries and runs keyed by the session's text id)
// holding sessions b then a (two messages and an event each, a run each), a session c
// with a run and no entry, and a lease on b.
func v16DB(t *testing.T) string {
	t.Helper()
	db, path := dbAtSchema(t, 16)
	defer db.Close()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i, session := range []string{"b", "a"} {
		at := now.Add(time.Duration(i) * time.Minute)
		ev := loop.Entry{Seq: 3, RunID: "r", Time: at, Kind: loop.EntryEvent, Event: &loop.Event{Seq: 7, Type: loop.EventRunStarted, RunID: "r", SessionID: session, Time: at, Data: &loop.RunStartedData{}}}
		for _, e := range []loop.Entry{msgEntry(1, session+" one"), msgEntry(2, session+" two"), ev} {
			e.Time = at
			body, _ := json.Marshal(e)
			exec(`INSERT INTO entries (session, seq, run_id, time, kind, body) VALUES (?, ?, ?, ?, ?, ?)`, session, e.Seq, e.RunID, e.Time.Format(time.RFC3339Nano), string(e.Kind), body)
		}
	}
	for _, session := range []string{"a", "b", "c"} {
		exec(`INSERT INTO runs (session, id, status, reason, started, ended, usage) VALUES (?, 'r', 'completed', '', ?, '', '{}')`, session, now.Format(time.RFC3339Nano))
	}
	exec(`INSERT INTO leases (session, run_id, pid, host, instance, heartbeat) VALUES ('b', 'r2', 1, 'h', 'i', ?)`, now.Format(time.RFC3339Nano))
	return path
}

// Migration 17 keeps every session readable: a file at schema 16 opens at the current
// version with every session's entries, head, runs, lease and listing as they were;
// sessions are keyed in the order they first wrote (b before a, c, which only has a
// run, last); a session keyed afresh gets the next key, and writing on goes on from
// each session's last seq.
func TestMigration17KeepsEverySessionReadable(t *testing.T) {
	s, err := OpenSQLite(v16DB(t))
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
		if err != nil || len(es) != 3 || es[0].Message.Text() != session+" one" || es[1].Message.Text() != session+" two" || es[2].Event.Seq != 7 {
			t.Fatalf("%s after migration: %+v %v", session, es, err)
		}
		h, err := s.LoadHead(ctx, session)
		if err != nil || len(h.Transcript) != 2 || h.LastSeq != 3 || h.LastEventSeq != 7 {
			t.Fatalf("%s head after migration: %+v %v", session, h, err)
		}
	}
	for _, session := range []string{"a", "b", "c"} {
		if st := runStatus(t, s, session, "r"); st != loop.StatusCompleted {
			t.Fatalf("run r of %s: %q", session, st)
		}
	}
	if l, held, err := s.Lease(ctx, "b"); err != nil || !held || l.RunID != "r2" {
		t.Fatalf("b's lease after migration: %+v %v %v", l, held, err)
	}
	list, err := s.Sessions(ctx)
	if err != nil || len(list) != 3 || list[0].ID != "a" || list[1].ID != "b" || list[2].ID != "c" ||
		list[0].Entries != 3 || list[0].Runs != 1 || list[2].Entries != 0 || list[2].Runs != 1 {
		t.Fatalf("sessions after migration: %+v %v", list, err)
	}
	if err := s.Append(ctx, "new", msgEntry(1, "new one")); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "a", msgEntry(4, "a four")); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "a", msgEntry(4, "a four again")); err == nil {
		t.Fatal("a second seq 4 on a was stored")
	}
	want := map[string]int64{"b": 1, "a": 2, "c": 3, "new": 4}
	for session, sid := range want {
		var got int64
		if err := s.db.QueryRow(`SELECT sid FROM session_keys WHERE id = ?`, session).Scan(&got); err != nil || got != sid {
			t.Fatalf("key of %s: %d %v, want %d", session, got, err, sid)
		}
	}
	var bad string
	if err := s.db.QueryRow(`PRAGMA integrity_check`).Scan(&bad); err != nil || bad != "ok" {
		t.Fatalf("integrity_check: %q %v", bad, err)
	}
}

// Migration 17 is one transaction: made to fail after its first statements (a table it
// creates is already there), it leaves the file at schema 16 as it was, and once the
// obstacle is gone it migrates.
func TestMigration17FailingMidwayLeavesTheFileAtSchema16(t *testing.T) {
	path := v16DB(t)
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE runs_v17 (x)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := OpenSQLite(path); err == nil || !strings.Contains(err.Error(), "16 → 17") {
		t.Fatalf("open with the obstacle: %v", err)
	}
	db, err = sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	var v, keys, sidCols int
	db.QueryRow(`PRAGMA user_version`).Scan(&v)
	db.QueryRow(`SELECT COUNT(*) FROM sqlite_schema WHERE name = 'session_keys'`).Scan(&keys)
	db.QueryRow(`SELECT COUNT(*) FROM pragma_table_info('entries') WHERE name = 'sid'`).Scan(&sidCols)
	if v != 16 || keys != 0 || sidCols != 0 {
		t.Fatalf("after the failed migration: version %d, session_keys %d, entries.sid %d; want 16, 0, 0", v, keys, sidCols)
	}
	if _, err := db.Exec(`DROP TABLE runs_v17`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if es, err := s.Load(context.Background(), "a"); err != nil || len(es) != 3 {
		t.Fatalf("a after migrating: %d entries, %v", len(es), err)
	}
}

// A run's rows share the last leaf: with sessions keyed by an integer given in the
// order they first write, the index entries and run records of new sessions land at the
// right edge of their b-trees, so a hundred one-message runs, each on a new session,
// write a handful of distinct pages of each tree (their last leaves and the pages above
// them), not a leaf per session anywhere in the tree (51 of the (session, seq) index and
// 34 of runs when keyed by the random text id, over 500 sessions before). Counted from
// the WAL's frame headers, each page mapped to its tree with dbstat.
func TestARunsRowsShareTheLastLeaf(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	a := newAgent(t, s, "hi")
	run := func() {
		if _, err := a.RunWith(ctx, loop.RunInput{Messages: []loop.Message{loop.UserMessage("hello")}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for range 500 {
		run()
	}
	checkpointWAL(t, s)
	for range 100 {
		run()
	}
	names, pages := walPageNumbers(t, s)
	distinct := map[string]map[uint32]bool{}
	for i, name := range names {
		if distinct[name] == nil {
			distinct[name] = map[uint32]bool{}
		}
		distinct[name][pages[i]] = true
	}
	for _, tree := range []string{"entries_by_session", "entries_transcript", "runs"} {
		if n := len(distinct[tree]); n == 0 || n > 12 {
			t.Errorf("100 new sessions' runs wrote %d distinct pages of %s, want 1–12 (its right edge)", n, tree)
		}
	}
	if t.Failed() {
		t.Logf("frames: %s", countPages(names))
	}
}
