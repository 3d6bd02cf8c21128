package store

import (
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/storetest"
)

func TestSQLiteStoreConforms(t *testing.T) {
	storetest.Run(t, func(t *testing.T) loop.SessionStore {
		s, err := OpenSQLite(filepath.Join(t.TempDir(), "sessions.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
