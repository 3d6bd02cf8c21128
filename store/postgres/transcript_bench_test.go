package postgres

import (
	"context"
	"testing"

	"github.com/agenthost/agenthost/bench/fake"
	"github.com/agenthost/agenthost/store/pgtest"
)

// BenchmarkLoadHeadCold is a run's first head read on a session of 200 one-step runs
// (801 messages, 3,200 events), from the transcript projection, as the SQLite store's
// benchmark of the same name; cpu-ns/op is this process's CPU (the server's is not).
func BenchmarkLoadHeadCold(b *testing.B) {
	s, err := Open(context.Background(), pgtest.Start(b).NewDatabase(b))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.Append(context.Background(), "s", chat("s", 1, 200, "w")...); err != nil {
		b.Fatal(err)
	}
	fake.WithCPU(b, func() {
		for b.Loop() {
			if h := coldHead(b, s, "s"); len(h.Transcript) != 801 {
				b.Fatalf("%d entries", len(h.Transcript))
			}
		}
	})
}
