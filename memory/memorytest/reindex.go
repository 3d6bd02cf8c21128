package memorytest

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/memory"
)

// A backfill (memory.Reindexer) sees the memories without a vector or with another
// model's, of one user or of everyone, in id order and in pages; a vector it stores is
// read back with its model, leaves the text and times alone, makes the memory current
// and findable by similarity; a memory deleted meanwhile is no error.
func reindex(t *testing.T, s memory.Store) {
	ctx := context.Background()
	r, ok := s.(memory.Reindexer)
	if !ok {
		t.Fatalf("%T is not a memory.Reindexer", s)
	}
	put := func(user, agent, text string, v []float32, model string) memory.Entry {
		e, err := memory.New(user, agent, memory.KindFact, text, t0)
		if err != nil {
			t.Fatal(err)
		}
		e.Vector, e.VectorModel = v, model
		if err := s.AddMemory(ctx, e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	const cur = "p/new"
	none := put("ana", "", "Ana has no vector yet", nil, "")
	old := put("ana", "", "Ana was embedded by the obsolete model", vec(1, 2), "p/old")
	put("ana", "", "Ana is embedded by the current model", vec(2, 3), cur)
	unknown := put("ana", "", "Ana was embedded before models were recorded", vec(3, 0), "")
	bo := put("bo", "", "Bo has no vector", nil, "")
	shared := put("", "helper", "The office opens at nine", nil, "")

	ids := func(es []memory.Entry) string {
		var out []string
		for _, e := range es {
			out = append(out, e.ID)
		}
		return strings.Join(out, ",")
	}
	sorted := func(es ...memory.Entry) string {
		slices.SortFunc(es, func(a, b memory.Entry) int { return strings.Compare(a.ID, b.ID) })
		return ids(es)
	}
	count := func(q memory.Stale, want int) {
		t.Helper()
		if n, err := r.CountStale(ctx, q); err != nil || n != want {
			t.Fatalf("CountStale(%+v) = %d, %v; want %d", q, n, err, want)
		}
	}
	count(memory.Stale{Model: cur}, 5)
	count(memory.Stale{User: "ana", Model: cur, After: "mem_ffffffffffffffff"}, 3) // After does not count
	all, err := r.Stale(ctx, memory.Stale{Model: cur})
	if err != nil || ids(all) != sorted(none, old, unknown, bo, shared) {
		t.Fatalf("Stale = %s, %v; want %s", ids(all), err, sorted(none, old, unknown, bo, shared))
	}
	// Two pages of two walk ana's three.
	want := sorted(none, old, unknown)
	p1, err1 := r.Stale(ctx, memory.Stale{User: "ana", Model: cur, Limit: 2})
	if err1 != nil || len(p1) != 2 {
		t.Fatalf("page 1 = %s, %v", ids(p1), err1)
	}
	p2, err2 := r.Stale(ctx, memory.Stale{User: "ana", Model: cur, Limit: 2, After: p1[1].ID})
	if err2 != nil || ids(append(p1, p2...)) != want {
		t.Fatalf("pages = %s + %s, %v; want %s", ids(p1), ids(p2), err2, want)
	}
	if p2[0].Text == "" || p2[0].Created.IsZero() {
		t.Fatalf("a stale entry is read whole: %+v", p2[0])
	}
	for _, e := range []memory.Entry{none, old, unknown} {
		if err := r.SetVector(ctx, e.ID, vec(0, 1), cur); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.SetVector(ctx, "mem_0000000000000000", vec(0, 1), cur); err != nil {
		t.Fatalf("SetVector of a gone memory: %v", err)
	}
	count(memory.Stale{User: "ana", Model: cur}, 0)
	count(memory.Stale{Model: cur}, 2)
	list, err := s.ListMemory(ctx, memory.Filter{User: "ana"})
	if err != nil || len(list) != 4 {
		t.Fatalf("list = %d entries, %v", len(list), err)
	}
	for _, e := range list {
		if e.VectorModel != cur || len(e.Vector) != 4 || !e.Updated.Equal(t0) || !strings.HasPrefix(e.Text, "Ana ") {
			t.Fatalf("after SetVector: %+v", e)
		}
		if e.ID == none.ID && (e.Vector[0] != 1 || e.Vector[1] != float32(0.2)) {
			t.Fatalf("the stored vector reads back as %v", e.Vector)
		}
	}
	// Its words are still indexed, and the vector is searched.
	if got := search(t, s, memory.Query{User: "ana", Text: "obsolete"}); len(got) != 1 || got[0] != "Ana was embedded by the obsolete model" {
		t.Fatalf("word search after reindex = %q", got)
	}
	// The backfilled memory shares no word with the query and is found by its vector.
	got := search(t, s, memory.Query{User: "ana", Text: "zzz", Vector: vec(0, 1), Limit: 1})
	if len(got) != 1 || !strings.HasPrefix(got[0], "Ana ") {
		t.Fatalf("similarity after reindex = %q", got)
	}
}
