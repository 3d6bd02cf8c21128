package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
)

// dbAtSchema creates a database file migrated to schema version n by this code's own
// first n migrations, as a release at version n left it, and returns it open, for the caller to close,
// with its path: the starting point of every migration test.
func dbAtSchema(t *testing.T, n int) (*sql.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sessions.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for v := range n {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := migrations[v](ctx, tx); err != nil {
			t.Fatalf("migration %d: %v", v+1, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, n)); err != nil {
		t.Fatal(err)
	}
	return db, path
}
