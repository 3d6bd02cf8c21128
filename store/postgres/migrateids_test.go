package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/store/pgtest"
)

// A database from before ids: its users get ids, and the owners, shares and memories
// that named them by name name their ids; a name that is no user's (a CLI label) stays;
// the new ana added after removing the migrated one reaches none of it.
func TestMigrationGivesUsersIDsAndRekeysWhatTheyOwn(t *testing.T) {
	url := pgtest.Start(t).NewDatabase(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	before := slices.IndexFunc(migrations, func(m string) bool { return strings.Contains(m, "ALTER TABLE users ADD COLUMN id ") })
	for _, q := range append(migrations[:before:before],
		`CREATE TABLE agenthost_schema (version INTEGER NOT NULL)`,
		fmt.Sprintf(`INSERT INTO agenthost_schema VALUES (%d)`, before),
		`INSERT INTO users VALUES ('ana', 'user', '`+access.HashToken("a")+`', now()), ('bo', 'user', '`+access.HashToken("b")+`', now())`,
		`INSERT INTO session_owners VALUES ('s-ana', 'ana'), ('s-cli', 'carl')`,
		`INSERT INTO shares VALUES ('s-ana', 'bo', 'viewer', 'ana', now())`,
		`INSERT INTO memories (id, owner, agent, kind, text, metadata, session, run_id, created, updated, terms)
			VALUES ('m1', 'ana', '', 'fact', 'ana likes tea', '{}', '', '', now(), now(), 'ana likes tea')`,
	) {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	conn.Close(ctx)
	s := open(t, url)
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
	if hits, err := s.SearchMemory(ctx, memory.Query{User: ana.ID, Text: "tea"}); err != nil || len(hits) != 1 {
		t.Fatalf("ana's memory by her id: %+v, %v", hits, err)
	}
	if err := s.RemoveUser(ctx, "ana"); err != nil {
		t.Fatal(err)
	}
	fresh, err := s.AddUser(ctx, access.User{Name: "ana", Role: access.RoleUser, TokenHash: access.HashToken("c")})
	if err != nil || fresh.ID == ana.ID {
		t.Fatalf("ana added again: %+v, %v", fresh, err)
	}
	if hits, _ := s.SearchMemory(ctx, memory.Query{User: fresh.ID, Text: "tea"}); len(hits) != 0 {
		t.Fatalf("the new ana finds the old one's memory: %+v", hits)
	}
}
