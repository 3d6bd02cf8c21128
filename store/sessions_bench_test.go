package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// BenchmarkSessionsList is `sessions list` on a store of 200 sessions of 100 entries of
// 400 bytes each (20,000 entries): one op is Sessions(). Each session's latest time is
// read from its last entry, not from every entry's row (MAX(time)).
func BenchmarkSessionsList(b *testing.B) {
	s, err := OpenSQLite(filepath.Join(b.TempDir(), "sessions.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for sess := range 200 {
		var es []loop.Entry
		for i := int64(1); i <= 100; i++ {
			m := loop.UserMessage(strings.Repeat("b", 400))
			es = append(es, loop.Entry{Seq: i, RunID: "r", Kind: loop.EntryMessage, Message: &m})
		}
		if err := s.Append(ctx, fmt.Sprintf("ses_%08x", sess*2654435761%(1<<32)), es...); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		list, err := s.Sessions(ctx)
		if err != nil || len(list) != 200 || list[0].Entries != 100 {
			b.Fatalf("%d sessions, %v", len(list), err)
		}
	}
}
