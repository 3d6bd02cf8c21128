package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store"
)

// Hole 6: a broken sessions.db is an error naming the file from Open, never a panic
// (a typed-nil store once reached Close in Open's cleanup).
func TestHole6_OpenWithABrokenStoreIsAClearError(t *testing.T) {
	validDB := func(t *testing.T, path string) {
		s, err := store.OpenSQLite(path)
		if err != nil {
			t.Fatal(err)
		}
		var es []loop.Entry
		for i := int64(1); i <= 300; i++ {
			m := loop.UserMessage(strings.Repeat("y", 300))
			es = append(es, loop.Entry{Seq: i, RunID: "r", Time: time.Unix(1700000000, 0), Kind: loop.EntryMessage, Message: &m})
		}
		if err := s.Append(context.Background(), "a", es...); err != nil {
			t.Fatal(err)
		}
		s.Close()
		os.Remove(path + "-wal") // closing checkpointed it
	}
	for _, tc := range []struct {
		name, want string
		make       func(t *testing.T, path string)
	}{
		{"garbage", "file is not a database", func(t *testing.T, path string) { os.WriteFile(path, []byte("garbage\x00\xff"), 0o644) }},
		{"directory", "is a directory, not a database file", func(t *testing.T, path string) { os.Mkdir(path, 0o755) }},
		{"truncated", "database file is truncated", func(t *testing.T, path string) {
			validDB(t, path)
			fi, _ := os.Stat(path)
			os.Truncate(path, fi.Size()/2)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "sessions.db")
			tc.make(t, db)
			p := filepath.Join(dir, "agent.toml")
			manifest := fmt.Sprintf("[agent]\nprovider = \"p\"\n[providers.p]\ncommand = %q\n[store]\nkind = \"sqlite\"\npath = \"sessions.db\"\n", scriptedBin)
			if err := os.WriteFile(p, []byte(manifest), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, noProvider := range []bool{false, true} {
				h, err := Open(context.Background(), Options{Manifest: p, NoProvider: noProvider, CacheDir: wasmCache})
				if h != nil || err == nil || !strings.HasPrefix(err.Error(), "open session store "+db+": ") || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Open = %v, %v; want an error naming %s with %q", h, err, db, tc.want)
				}
			}
		})
	}
}
