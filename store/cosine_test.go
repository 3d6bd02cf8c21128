package store

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agenthost/agenthost/memory"
)

// goScorer hides sqliteIndex's SearchScore: SearchVectors then scores in Go what
// SearchScan reads, as it does for a store that is no IndexScorer.
type goScorer struct{ IndexDB }

// TestVectorsScoredInSQLiteScoreExactlyAsInGo: the SQLite store scores vectors inside
// the database (SearchScore, no vector copied out); every memory a search reads gets the
// score Go's CosineUnit gives the vector SearchScan reads, bit for bit, with the same
// straggler flag — probed lists, stragglers (re-embedded after training) and the scan
// without an index — and a search ranks the same memories with the same scores.
func TestVectorsScoredInSQLiteScoreExactlyAsInGo(t *testing.T) {
	s, err := OpenSQLite(filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tp := newTopics(11, 32, 30, 4)
	fillMemories(t, s, 2500, 1, tp)
	ctx := context.Background()
	sc := IndexScope{"u0", ""}
	if err := BuildIndex(ctx, sqliteIndex{s}, sc); err != nil {
		t.Fatal(err)
	}
	for i := range 40 { // stragglers: vectors set after training
		if err := s.SetVector(ctx, fmt.Sprintf("mem_%07d", i*50), tp.vector(false), "m"); err != nil {
			t.Fatal(err)
		}
	}
	st, ok, err := sqliteIndex{s}.IndexState(ctx, sc)
	if err != nil || !ok {
		t.Fatalf("no index: %v", err)
	}
	type scored struct {
		score     float64
		straggler bool
	}
	for n := range 10 {
		u := memory.Unit(tp.vector(n%2 == 1))
		for _, idx := range []*IndexState{st, nil} {
			var probe []int64
			if idx != nil {
				probe = idx.Probe(u)
			}
			inSQL, inGo := map[string]scored{}, map[string]scored{}
			err := sqliteIndex{s}.SearchScore(ctx, sc, "", idx, probe, u, func(id []byte, score float64, straggler bool) {
				inSQL[string(id)] = scored{score, straggler}
			})
			if err != nil {
				t.Fatal(err)
			}
			err = sqliteIndex{s}.SearchScan(ctx, sc, "", idx, probe, func(id, b []byte, straggler bool) {
				inGo[string(id)] = scored{memory.CosineUnit(b, u), straggler}
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(inSQL) != len(inGo) || len(inGo) == 0 {
				t.Fatalf("SearchScore read %d memories, SearchScan %d", len(inSQL), len(inGo))
			}
			stragglers := 0
			for id, g := range inGo {
				q, ok := inSQL[id]
				if !ok || math.Float64bits(q.score) != math.Float64bits(g.score) || q.straggler != g.straggler {
					t.Fatalf("%s: in SQLite %+v (read %v), in Go %+v", id, q, ok, g)
				}
				if g.straggler {
					stragglers++
				}
			}
			if idx != nil && (stragglers < 40 || len(inGo) >= 2500) {
				t.Fatalf("with the index: %d read, %d stragglers; want a fraction and the 40 re-embedded", len(inGo), stragglers)
			}
		}
		q := memory.Query{User: "u0", Agent: "helper", Limit: 5, Vector: u}
		got, err := SearchVectors(ctx, sqliteIndex{s}, s.index, q)
		if err != nil {
			t.Fatal(err)
		}
		want, err := SearchVectors(ctx, goScorer{sqliteIndex{s}}, s.index, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 5 || !slices.Equal(got, want) {
			t.Fatalf("scored in SQLite %v, in Go %v", got, want)
		}
	}
}
