package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// schemaV0 is the schema as the store created it before versioning (user_version 0),
// copied verbatim: the fixture every migration is tested from.
const schemaV0 = `
CREATE TABLE IF NOT EXISTS entries (
	session TEXT    NOT NULL,
	seq     INTEGER NOT NULL,
	run_id  TEXT    NOT NULL,
	time    TEXT    NOT NULL,
	kind    TEXT    NOT NULL,
	body    BLOB    NOT NULL,
	PRIMARY KEY (session, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS runs (
	id      TEXT PRIMARY KEY,
	session TEXT NOT NULL,
	status  TEXT NOT NULL,
	reason  TEXT NOT NULL,
	started TEXT NOT NULL,
	ended   TEXT NOT NULL,
	usage   TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_session ON runs (session, started);
CREATE TABLE IF NOT EXISTS kv (
	plugin TEXT NOT NULL,
	key    TEXT NOT NULL,
	value  BLOB NOT NULL,
	PRIMARY KEY (plugin, key)
) WITHOUT ROWID;
`

// oldDB writes a database as the unversioned store did: schema, one session with two
// entries, a finished run "r1" and a plugin value.
func oldDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sessions.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(schemaV0); err != nil {
		t.Fatal(err)
	}
	for _, e := range []loop.Entry{msgEntry(1, "old one"), msgEntry(2, "old two")} {
		body, _ := json.Marshal(e)
		if _, err := db.Exec(`INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?)`, "a", e.Seq, e.RunID, e.Time.Format(time.RFC3339Nano), string(e.Kind), body); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`INSERT INTO runs VALUES ('r1', 'a', 'completed', 'end_turn', '2023-11-14T22:13:20Z', '2023-11-14T22:13:21Z', '{"total_tokens":7}')`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO kv VALUES ('p', 'k', x'00ff')`); err != nil {
		t.Fatal(err)
	}
	return path
}

func userVersion(t *testing.T, s *SQLite) int {
	t.Helper()
	var v int
	if err := s.db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// Hole 4: a database made before versioning migrates with its data intact, and runs
// are then keyed by (session, run): r1 on another session leaves a's r1 alone.
func TestHole4_MigratesFromTheUnversionedSchema(t *testing.T) {
	path := oldDB(t)
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if v := userVersion(t, s); v != schemaVersion || schemaVersion != 19 {
		t.Fatalf("user_version %d, want %d", v, schemaVersion)
	}
	es, err := s.Load(ctx, "a")
	if err != nil || len(es) != 2 || es[0].Message.Text() != "old one" || es[1].Message.Text() != "old two" {
		t.Fatalf("entries after migration: %+v %v", es, err)
	}
	if v, ok, _ := s.KVGet(ctx, "p", "k"); !ok || string(v) != "\x00\xff" {
		t.Fatalf("kv after migration: %q %v", v, ok)
	}
	want := loop.RunRecord{ID: "r1", SessionID: "a", Status: loop.StatusCompleted, Reason: loop.ReasonEndTurn,
		Started: time.Unix(1700000000, 0).UTC(), Ended: time.Unix(1700000001, 0).UTC(), Usage: loop.Usage{TotalTokens: 7}}
	if runs, err := s.Runs(ctx, "a"); err != nil || len(runs) != 1 || runs[0] != want {
		t.Fatalf("runs after migration: %+v %v", runs, err)
	}
	// The same run id on session b is another run.
	if err := s.SaveRun(ctx, loop.RunRecord{ID: "r1", SessionID: "b", Started: time.Unix(1700000100, 0).UTC()}); err != nil {
		t.Fatal(err)
	}
	if runs, _ := s.Runs(ctx, "a"); len(runs) != 1 || runs[0] != want {
		t.Fatalf("a's r1 after b saved r1: %+v", runs)
	}
	if runs, _ := s.Runs(ctx, "b"); len(runs) != 1 || runs[0].Status != "" {
		t.Fatalf("b's r1: %+v", runs)
	}
	// Opening again is a no-op.
	s.Close()
	if s, err = OpenSQLite(path); err != nil || userVersion(t, s) != schemaVersion {
		t.Fatalf("reopen: %v", err)
	}
}

// Hole 4 through the loop: a run id used on one session is free on another and refused
// (ErrRunExists) on its own, and recovery never writes into the wrong session.
func TestHole4_RunIDsArePerSession(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	a := newAgent(t, s, "done")
	in := func(session string) loop.RunInput {
		return loop.RunInput{SessionID: session, RunID: "r1", Messages: []loop.Message{loop.UserMessage("x")}}
	}
	if _, err := a.Run(ctx, in("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(ctx, in("b")); err != nil {
		t.Fatalf("r1 on another session: %v", err)
	}
	before, _ := s.Load(ctx, "a")
	_, err := a.Run(ctx, in("a"))
	if !errors.Is(err, loop.ErrRunExists) || !strings.Contains(err.Error(), `run "r1" on session "a"`) {
		t.Fatalf("reused run id: %v, want ErrRunExists", err)
	}
	after, _ := s.Load(ctx, "a")
	if len(after) != len(before) || runStatus(t, s, "a", "r1") != loop.StatusCompleted || runStatus(t, s, "b", "r1") != loop.StatusCompleted {
		t.Fatalf("the refused run changed the store")
	}
	if n, err := loop.RecoverRuns(ctx, s); n != 0 || err != nil {
		t.Fatalf("recovery ended %d runs (%v)", n, err)
	}
}

func TestSchemaFromANewerAgenthostIsRefused(t *testing.T) {
	path := oldDB(t)
	db, _ := sql.Open("sqlite", "file:"+path)
	if _, err := db.Exec(`PRAGMA user_version = 99`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err := OpenSQLite(path)
	if err == nil || err.Error() != "open session store "+path+": schema version 99 is newer than this agenthost knows ("+strconv.Itoa(schemaVersion)+"): use a newer agenthost" {
		t.Fatalf("got %v", err)
	}
}

// Two processes opening an old file at once: each migration is one write transaction
// that re-reads the version, so both opens succeed and the data is migrated once.
func TestMigrationFromTwoOpenersAtOnce(t *testing.T) {
	path := oldDB(t)
	errs := make(chan error, 2)
	stores := make(chan *SQLite, 2)
	for range 2 {
		go func() {
			s, err := OpenSQLite(path)
			errs <- err
			stores <- s
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		s := <-stores
		defer s.Close()
		if v := userVersion(t, s); v != schemaVersion {
			t.Fatalf("user_version %d", v)
		}
		if runs, err := s.Runs(context.Background(), "a"); err != nil || len(runs) != 1 {
			t.Fatalf("runs %+v %v", runs, err)
		}
	}
}
