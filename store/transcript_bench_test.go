package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkLoadHeadCold is a run's first head read on a session of 200 one-step runs
// (801 messages, 4,000 events): from the transcript projection, and from the entries
// (the projection dropped before each read, so it is read as a session stored before
// it; the rebuild is not timed), and from the projection by the claim's one statement.
func BenchmarkLoadHeadCold(b *testing.B) {
	for _, from := range []string{"projection", "claim", "entries"} {
		b.Run(from, func(b *testing.B) {
			s, err := OpenSQLite(filepath.Join(b.TempDir(), "sessions.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			if err := s.Append(ctx, "s", chat("s", 1, 200, "w")...); err != nil {
				b.Fatal(err)
			}
			q := qHeadProjected
			args := []any{"s"}
			switch from {
			case "entries":
				q = qHeadEntries
			case "claim": // the run start's one statement: the claim row first
				q, args = qClaimCold, []any{"s", "run-x"}
			}
			b.ReportAllocs()
			c0 := processCPU()
			for b.Loop() {
				h, r, err := s.readHead(ctx, q, "s", func([]byte) {}, args...)
				if err != nil || len(h.Transcript) != 801 || (r.cold.Chunks() > 0) == (from == "entries") || r.why != "" {
					b.Fatal(fmt.Sprint(len(h.Transcript), r.why, err))
				}
			}
			b.ReportMetric(float64(processCPU()-c0)/float64(b.N), "cpu-ns/op")
		})
	}
}
