package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store"
)

// oldSession stores a session last updated a year ago, as a process of then would have.
func oldSession(t *testing.T, db, id string) {
	t.Helper()
	st, err := store.OpenSQLite(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	then := time.Now().AddDate(-1, 0, 0)
	m := loop.UserMessage("long ago")
	if err := st.Append(context.Background(), id, loop.Entry{Seq: 1, RunID: "r", Time: then, Kind: loop.EntryMessage, Message: &m}); err != nil {
		t.Fatal(err)
	}
}

// Retention: "sessions prune" deletes the sessions not updated for --older-than or
// [store] retention and keeps the rest (--dry-run only lists them); serve with retention
// set prunes at start and says so; without either, prune is a usage error.
func TestE2E_RetentionPrunesOldSessionsOnly(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"repeat": true, "turns": [{"text": "hi"}]}`})
	if r := e.agenthost(t, "run", "--session", "recent", "--new", "hello"); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	db := filepath.Join(e.dir, "sessions.db")
	oldSession(t, db, "ancient")
	if r := e.agenthost(t, "sessions", "prune"); r.code != 2 || !strings.Contains(r.stderr, "set [store] retention or --older-than") {
		t.Fatalf("prune without a period: %d %s", r.code, r.stderr)
	}
	r := e.agenthost(t, "sessions", "prune", "--older-than", "30d", "--dry-run")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "would delete 1 session(s) not updated for 720h0m0s: ancient" {
		t.Fatalf("dry run: %d %q %s", r.code, r.stdout, r.stderr)
	}
	r = e.agenthost(t, "sessions", "prune", "--older-than", "30d")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "deleted 1 session(s) not updated for 720h0m0s: ancient" {
		t.Fatalf("prune: %d %q %s", r.code, r.stdout, r.stderr)
	}
	r = e.agenthost(t, "sessions", "list", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"id": "recent"`) || strings.Contains(r.stdout, "ancient") {
		t.Fatalf("sessions after prune: %s", r.stdout)
	}

	oldSession(t, db, "bygone")
	b, _ := os.ReadFile(e.manifest)
	os.WriteFile(e.manifest, []byte(strings.Replace(string(b), `path = "sessions.db"`, "path = \"sessions.db\"\nretention = \"30d\"", 1)), 0o644)
	s := e.serve(t)
	deadline := time.Now().Add(readyBound)
	for !strings.Contains(s.log(), "retention: deleted 1 session(s) not updated for 720h0m0s") {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not prune:\n%s", s.log())
		}
		time.Sleep(20 * time.Millisecond) // polling the log, bounded by the deadline
	}
	if got := s.session(t, "recent"); len(got.Entries) == 0 {
		t.Fatal("serve's retention deleted a recent session")
	}
}
