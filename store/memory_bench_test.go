package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/memory"
)

// BenchmarkMemoryRecall is one recall (what the memory context strategy does before a
// model call): a search of a user's memories for a typical message, top 5, at 10,000
// and 100,000 memories of that one user (the worst case), and at 100,000 memories spread
// over 1,000 users (a shared host: the scope column keeps the search to the user's own).
// Memories are ten words from a 2,000-word vocabulary with a Zipf spread, so common
// words match many entries, as in real text.
func BenchmarkMemoryRecall(b *testing.B) {
	for _, c := range []struct {
		name     string
		n, users int
	}{{"10k", 10_000, 1}, {"100k", 100_000, 1}, {"100k-1000-users", 100_000, 1000}} {
		s, err := OpenSQLite(filepath.Join(b.TempDir(), "m.db"))
		if err != nil {
			b.Fatal(err)
		}
		fillMemories(b, s, c.n, c.users, 0)
		q := memory.Query{User: "u0", Agent: "helper", Text: "which w17 should I buy for w3 and w250 next w1999?", Kind: memory.KindFact, Limit: 5}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				hits, err := s.SearchMemory(context.Background(), q)
				if err != nil || len(hits) != 5 {
					b.Fatalf("%d hits, %v", len(hits), err)
				}
			}
		})
		s.Close()
	}
}

// fillMemories writes n memories of users u0…u(users-1) in one transaction (AddMemory commits each:
// a hundred thousand commits would make the setup the benchmark).
func fillMemories(b *testing.B, s *SQLite, n, users, dims int) {
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.1, 1, 1999)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Format(feedbackTime)
	err := s.w.write(context.Background(), func(ctx context.Context, tx *wtx) error {
		for i := range n {
			words := make([]string, 10)
			for j := range words {
				words[j] = fmt.Sprintf("w%d", zipf.Uint64())
			}
			user := fmt.Sprintf("u%d", i%users)
			var vector []byte
			if dims > 0 {
				v := make([]float32, dims)
				for k := range v {
					v[k] = float32(rng.NormFloat64())
				}
				vector = memory.EncodeVector(v)
			}
			text := strings.Join(words, " ")
			if _, err := tx.ExecContext(ctx, `INSERT INTO memories (id, owner, agent, scope, kind, text, metadata, session, run_id, created, updated, terms, vector)
VALUES (?, ?, '', ?, 'fact', ?, '{}', '', '', ?, ?, ?, ?)`, fmt.Sprintf("mem_%d", i), user, scopeToken(user, ""), text, at, at, text, vector); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkMemoryRecallHybrid is a recall with an embedding: the word search above plus
// the similarity search, which reads every vector of the user's memories and ranks them
// in Go. 10,000 memories of one user, at 384 dimensions (small embedding models) and
// 1,536 (OpenAI's text-embedding-3-small).
func BenchmarkMemoryRecallHybrid(b *testing.B) {
	for _, dims := range []int{384, 1536} {
		s, err := OpenSQLite(filepath.Join(b.TempDir(), "m.db"))
		if err != nil {
			b.Fatal(err)
		}
		fillMemories(b, s, 10_000, 1, dims)
		qv := make([]float32, dims)
		for i := range qv {
			qv[i] = float32(i%7) - 3
		}
		q := memory.Query{User: "u0", Agent: "helper", Text: "which w17 should I buy for w3 and w250 next w1999?", Kind: memory.KindFact, Limit: 5, Vector: qv}
		b.Run(fmt.Sprintf("10k-%dd", dims), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				hits, err := s.SearchMemory(context.Background(), q)
				if err != nil || len(hits) != 5 {
					b.Fatalf("%d hits, %v", len(hits), err)
				}
			}
		})
		s.Close()
	}
}
