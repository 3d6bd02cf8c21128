package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// BenchmarkOpenSQLite is the cost every command pays to open a store of about 10 MB
// (20,000 entries of 400 bytes): migrations checked and the header check that finds a
// truncated file (checkNotTruncated).
func BenchmarkOpenSQLite(b *testing.B) {
	path := filepath.Join(b.TempDir(), "sessions.db")
	s, err := OpenSQLite(path)
	if err != nil {
		b.Fatal(err)
	}
	for sess := 0; sess < 20; sess++ {
		var es []loop.Entry
		for i := int64(1); i <= 1000; i++ {
			m := loop.UserMessage(strings.Repeat("b", 400))
			es = append(es, loop.Entry{Seq: i, RunID: "r", Kind: loop.EntryMessage, Message: &m})
		}
		if err := s.Append(context.Background(), string(rune('a'+sess)), es...); err != nil {
			b.Fatal(err)
		}
	}
	s.Close()
	b.ResetTimer()
	for b.Loop() {
		s, err := OpenSQLite(path)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}
