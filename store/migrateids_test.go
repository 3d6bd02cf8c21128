package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/memory"
)

// dbAtVersion makes a database file at schema version v, as a binary of that version
// left it.
func dbAtVersion(t *testing.T, v int) (string, *sql.DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sessions.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	for i := range v {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := migrations[i](ctx, tx); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, i+1)); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	return path, db
}

// A file from before ids: its users get ids, and the owners, shares and memories that
// named them by name name their ids (memories still found by search: the scope token
// follows); a name that is no user's (a CLI label) stays; the new ana added after
// removing the migrated one reaches none of it.
func TestMigrationGivesUsersIDsAndRekeysWhatTheyOwn(t *testing.T) {
	path, db := dbAtVersion(t, 10) // v11 is the ids step
	for _, q := range []string{
		`INSERT INTO users VALUES ('ana', 'user', '` + access.HashToken("a") + `', '2026-01-01T00:00:00Z')`,
		`INSERT INTO users VALUES ('bo', 'user', '` + access.HashToken("b") + `', '2026-01-01T00:00:00Z')`,
		`INSERT INTO session_owners VALUES ('s-ana', 'ana'), ('s-cli', 'carl')`,
		`INSERT INTO shares VALUES ('s-ana', 'bo', 'viewer', 'ana', '2026-01-01T00:00:00Z')`,
		`INSERT INTO memories (id, owner, agent, scope, kind, text, metadata, session, run_id, created, updated, terms)
			VALUES ('m1', 'ana', '', '` + scopeToken("ana", "") + `', 'fact', 'ana likes tea', '{}', '', '', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z', 'ana likes tea')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if v := userVersion(t, s); v != schemaVersion {
		t.Fatalf("user_version %d, want %d", v, schemaVersion)
	}
	ana, _, _ := access.Lookup(ctx, s, "ana")
	bo, _, _ := access.Lookup(ctx, s, "bo")
	if !access.IsID(ana.ID) || !access.IsID(bo.ID) || ana.ID == bo.ID {
		t.Fatalf("ids after migration: ana %q, bo %q", ana.ID, bo.ID)
	}
	if o, _ := s.Owner(ctx, "s-ana"); o != ana.ID {
		t.Fatalf("owner of s-ana = %q, want ana's id %s", o, ana.ID)
	}
	if o, _ := s.Owner(ctx, "s-cli"); o != "carl" {
		t.Fatalf("owner of s-cli = %q, want the label kept", o)
	}
	if sh, _ := s.Shares(ctx, "s-ana"); len(sh) != 1 || sh[0].User != bo.ID || sh[0].By != ana.ID {
		t.Fatalf("shares of s-ana = %+v", sh)
	}
	hits, err := s.SearchMemory(ctx, memory.Query{User: ana.ID, Text: "tea"})
	if err != nil || len(hits) != 1 || hits[0].Entry.User != ana.ID {
		t.Fatalf("ana's memory by her id: %+v, %v", hits, err)
	}
	if hits, _ := s.SearchMemory(ctx, memory.Query{User: "ana", Text: "tea"}); len(hits) != 0 {
		t.Fatalf("the name still finds the memory: %+v", hits)
	}
	if err := s.RemoveUser(ctx, "ana"); err != nil {
		t.Fatal(err)
	}
	fresh, err := s.AddUser(ctx, access.User{Name: "ana", Role: access.RoleUser, TokenHash: access.HashToken("c")})
	if err != nil {
		t.Fatal(err)
	}
	if hits, _ := s.SearchMemory(ctx, memory.Query{User: fresh.ID, Text: "tea"}); len(hits) != 0 || fresh.ID == ana.ID {
		t.Fatalf("the new ana finds the old one's memory: %+v", hits)
	}
}
