package store_test

import (
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
	audittest.Run(t, func(t *testing.T) audit.Store {
		s, err := store.OpenSQLite(filepath.Join(t.TempDir(), "a.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
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
