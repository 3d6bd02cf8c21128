package store_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/access/accesstest"
	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/audit/audittest"
	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/memory/memorytest"
	"github.com/agenthost/agenthost/store"
)

func TestSQLiteMemoryConforms(t *testing.T) {
	memorytest.Run(t, func(t *testing.T) memory.Store {
		s, err := store.OpenSQLite(filepath.Join(t.TempDir(), "m.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestSQLiteAuditConforms(t *testing.T) {
	audittest.Run(t, func(t *testing.T) (audit.Store, audittest.Tamper) {
		path := filepath.Join(t.TempDir(), "a.db")
		s, err := store.OpenSQLite(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, func(t *testing.T, stmt string) {
			db, err := sql.Open("sqlite", path) // another connection, as another process would
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
	})
}

func TestSQLiteAccessConforms(t *testing.T) {
	accesstest.Run(t, func(t *testing.T) access.Store {
		s, err := store.OpenSQLite(filepath.Join(t.TempDir(), "u.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
