package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/memory"
)

// BenchmarkMemoryRecall is one recall (what the memory context strategy does before a
// model call): a search of a user's memories for a typical message, top 5, at 10,000
// and 100,000 memories of that one user (the worst case), and at 100,000 memories spread
// over 1,000 users (a shared host: the scope column keeps the search to the user's own,
// and the user's 100 memories are ranked whole, store/memorywords.go's rankScope).
// cpu-ns/op is the process's CPU a recall (wall time follows the machine's load).
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
		fillMemories(b, s, c.n, c.users, nil)
		q := memory.Query{User: "u0", Agent: "helper", Text: recallQuery, Kind: memory.KindFact, Limit: 5}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				hits, err := s.SearchMemory(context.Background(), q)
				if err != nil || len(hits) != 5 {
					b.Fatalf("%d hits, %v", len(hits), err)
				}
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
		s.Close()
	}
}

// fillMemories writes n memories of users u0…u(users-1) in one transaction (AddMemory commits each:
// a hundred thousand commits would make the setup the benchmark), each ten words from a
// 2,000-word vocabulary with a Zipf spread and, with t, a vector of t's shape
// (memoryrecall_test.go). Their lists are left to a build.
func fillMemories(tb testing.TB, s *SQLite, n, users int, t *topics) {
	tb.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.1, 1, 1999)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Format(timeText)
	err := s.w.write(context.Background(), func(ctx context.Context, tx *wtx) error {
		for i := range n {
			words := make([]string, 10)
			for j := range words {
				words[j] = fmt.Sprintf("w%d", zipf.Uint64())
			}
			user := fmt.Sprintf("u%d", i%users)
			var vector []byte
			if t != nil {
				vector = memory.EncodeVector(t.vector(false))
			}
			text := strings.Join(words, " ")
			if _, err := tx.ExecContext(ctx, `INSERT INTO memories (id, owner, agent, scope, kind, text, metadata, session, run_id, created, updated, terms, vector)
VALUES (?, ?, '', ?, 'fact', ?, '{}', '', '', ?, ?, ?, ?)`, fmt.Sprintf("mem_%07d", i), user, scopeToken(user, ""), text, at, at, text, vector); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// recallQuery is the message of the recall benchmarks: two common words (w3, w17), a
// rare one (w250), a very rare one (w1999) and words no memory holds.
const recallQuery = "which w17 should I buy for w3 and w250 next w1999?"

// BenchmarkMemoryRecallVsN is the "recall vs N" row: one recall of top 5 at 1,000, 10,000
// and 100,000 memories of one user, by words alone (words/N) and hybrid, words and a
// 384-dimension vector (hybrid/N), with the vector index built as searches have it built
// (BuildIndex; below memory.IndexFrom there is none). cpu-ns/op is the process's CPU a
// recall; recall@5 is how much of exact search's top 5 the index finds, over 20 queries of
// the fixed seeded set, measured before the timed loop.
func BenchmarkMemoryRecallVsN(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		s, err := OpenSQLite(filepath.Join(b.TempDir(), "m.db"))
		if err != nil {
			b.Fatal(err)
		}
		tp := newTopics(53, 384, 200, 10)
		fillMemories(b, s, n, 1, tp)
		if err := BuildIndex(context.Background(), sqliteIndex{s}, IndexScope{"u0", ""}); err != nil {
			b.Fatal(err)
		}
		queries := make([][]float32, 20)
		for i := range queries {
			queries[i] = tp.vector(false)
		}
		recall := recallAt5(b, s, queries)
		wordRecall := wordRecallAt5(b, s)
		name := fmt.Sprintf("%dk", n/1000)
		for _, kind := range []string{"words", "hybrid"} {
			q := memory.Query{User: "u0", Agent: "helper", Text: recallQuery, Kind: memory.KindFact, Limit: 5}
			if kind == "hybrid" {
				q.Vector = queries[0]
			}
			b.Run(kind+"/"+name, func(b *testing.B) {
				b.ReportAllocs()
				cpu0 := processCPU()
				for b.Loop() {
					hits, err := s.SearchMemory(context.Background(), q)
					if err != nil || len(hits) != 5 {
						b.Fatalf("%d hits, %v", len(hits), err)
					}
				}
				b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
				if kind == "hybrid" {
					b.ReportMetric(recall, "recall@5")
				} else {
					b.ReportMetric(wordRecall, "recall@5")
				}
			})
		}
		s.Close()
	}
}

// processCPU is the CPU time this process has used (user and system), in nanoseconds.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// wordRecallAt5 is how much of the engine's own top 5 (FTS5's bm25 over every match) the
// word search finds, over 20 queries of a common, a middling and a rare word of the
// benchmark's vocabulary (fixed seed).
func wordRecallAt5(tb testing.TB, s *SQLite) float64 {
	tb.Helper()
	rng := rand.New(rand.NewPCG(5, 3))
	ctx := context.Background()
	var sum float64
	for range 20 {
		text := fmt.Sprintf("w%d w%d w%d", 1+rng.IntN(5), 20+rng.IntN(80), 300+rng.IntN(1500))
		q := memory.Query{User: "u0", Text: text, Limit: 5}
		got, err := s.searchWords(ctx, q)
		if err != nil {
			tb.Fatal(err)
		}
		want, err := s.rankWords(ctx, q, "{scope} : ("+memory.FTS5Query(visibleScopes(q))+") AND {terms} : ("+memory.FTS5Query(memory.Terms(text))+")")
		if err != nil || len(want) == 0 {
			tb.Fatalf("engine's ranking: %d hits, %v", len(want), err)
		}
		found := 0
		for _, w := range want {
			for _, g := range got {
				if g.ID == w.ID {
					found++
					break
				}
			}
		}
		sum += float64(found) / float64(len(want))
	}
	return sum / 20
}
