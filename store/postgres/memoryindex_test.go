package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/store"
	"github.com/agenthost/agenthost/store/pgtest"
	"github.com/jackc/pgx/v5"
)

// clustered is n 32-dimension vectors around 40 seeded centers.
func clustered(seed uint64, n int) [][]float32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	centers := make([][]float32, 40)
	for i := range centers {
		centers[i] = make([]float32, 32)
		for j := range centers[i] {
			centers[i][j] = float32(rng.NormFloat64())
		}
	}
	out := make([][]float32, n)
	for i := range out {
		c := centers[rng.IntN(len(centers))]
		out[i] = make([]float32, 32)
		for j := range out[i] {
			out[i][j] = c[j] + float32(rng.NormFloat64()*0.5)
		}
	}
	return out
}

// The PostgreSQL store keeps the same index (store/vectorindex.go) in its SQL: a search
// asks for a build, the built index finds what exact search finds and a memory added
// after it, another user's memories stay out, and erasing the user's memories erases
// the index.
func TestVectorIndexOnPostgres(t *testing.T) {
	s := open(t, pgtest.Start(t).NewDatabase(t))
	ctx := context.Background()
	vs := clustered(5, memory.IndexFrom+50)
	rows := make([][]any, 0, 2*len(vs))
	for i, v := range vs {
		for _, u := range []string{"u0", "u1"} {
			rows = append(rows, []any{fmt.Sprintf("mem_%s_%05d", u, i), u, "", "fact", "memory", []byte("{}"), "", "", time.Now(), time.Now(), "memory", memory.EncodeVector(v)})
		}
	}
	_, err := s.db.pool.CopyFrom(ctx, pgx.Identifier{"memories"}, []string{"id", "owner", "agent", "kind", "text", "metadata", "session", "run_id", "created", "updated", "terms", "vector"}, pgx.CopyFromRows(rows))
	if err != nil {
		t.Fatal(err)
	}
	q := memory.Query{User: "u0", Limit: 5, Vector: clustered(6, 1)[0]}
	exact, err := s.searchVector(ctx, q) // no index: exact, and asks for one
	if err != nil || len(exact) != 5 {
		t.Fatalf("%d hits, %v", len(exact), err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, ok, err := (pgIndex{s}).IndexState(ctx, store.IndexScope{Owner: "u0"}); err != nil || ok {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no index two minutes after a search asked for one")
		}
		time.Sleep(20 * time.Millisecond)
	}
	got, err := s.searchVector(ctx, q)
	if err != nil || !slices.Equal(hitIDs(got), hitIDs(exact)) {
		t.Fatalf("indexed search %v (%v), exact %v", hitIDs(got), err, hitIDs(exact))
	}
	for _, h := range got {
		if h.User != "u0" {
			t.Fatalf("u0's search found %s of %s", h.ID, h.User)
		}
	}
	e, _ := memory.New("u0", "", memory.KindFact, "added after the training", time.Now())
	e.Vector = clustered(7, 1)[0]
	if err := s.AddMemory(ctx, e); err != nil {
		t.Fatal(err)
	}
	if got, err := s.searchVector(ctx, memory.Query{User: "u0", Limit: 1, Vector: e.Vector}); err != nil || len(got) != 1 || got[0].ID != e.ID {
		t.Fatalf("the memory added after the training: %v %v", hitIDs(got), err)
	}
	if _, err := s.DeleteMemory(ctx, memory.Filter{User: "u0"}); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.db.pool.QueryRow(ctx, `SELECT count(*) FROM memory_index WHERE owner = 'u0'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d index rows of an erased user (%v)", n, err)
	}
}

func hitIDs(hits []memory.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.ID)
	}
	return out
}
