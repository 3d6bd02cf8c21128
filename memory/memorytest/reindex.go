package memorytest

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/memory"
)

// reindexModel is the embedding model the backfill of reindex is for.
const reindexModel = "p/new"

// staleMemories are the memories reindex stores: ana's without a vector, with another
// model's and with one of no recorded model (stale), one of ana's current, and bo's
// and an agent's without a vector (stale too).
type staleMemories struct {
	none, old, unknown, bo, shared memory.Entry
}

// A backfill (memory.Reindexer) sees the memories without a vector or with another
// model's, of one user or of everyone, in id order and in pages; a vector it stores is
// read back with its model, leaves the text and times alone, makes the memory current
// and findable by similarity; a memory deleted meanwhile is no error.
func reindex(t *testing.T, s memory.Store) {
	r, ok := s.(memory.Reindexer)
	if !ok {
		t.Fatalf("%T is not a memory.Reindexer", s)
	}
	m := putStale(t, s)
	staleListed(t, r, m)
	vectorsSet(t, s, r, m)
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

func putStale(t *testing.T, s memory.Store) staleMemories {
	ctx := context.Background()
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
	var m staleMemories
	m.none = put("ana", "", "Ana has no vector yet", nil, "")
	m.old = put("ana", "", "Ana was embedded by the obsolete model", vec(1, 2), "p/old")
	put("ana", "", "Ana is embedded by the current model", vec(2, 3), reindexModel)
	m.unknown = put("ana", "", "Ana was embedded before models were recorded", vec(3, 0), "")
	m.bo = put("bo", "", "Bo has no vector", nil, "")
	m.shared = put("", "helper", "The office opens at nine", nil, "")
	return m
}

// entryIDs are the entries' ids, comma-separated, in their order.
func entryIDs(es []memory.Entry) string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID)
	}
	return strings.Join(out, ",")
}

// sortedIDs are the entries' ids, comma-separated, in id order.
func sortedIDs(es ...memory.Entry) string {
	slices.SortFunc(es, func(a, b memory.Entry) int { return strings.Compare(a.ID, b.ID) })
	return entryIDs(es)
}

func countStale(t *testing.T, r memory.Reindexer, q memory.Stale, want int) {
	t.Helper()
	if n, err := r.CountStale(context.Background(), q); err != nil || n != want {
		t.Fatalf("CountStale(%+v) = %d, %v; want %d", q, n, err, want)
	}
}

// staleListed: the stale memories are counted and listed, of everyone or of one user,
// in id order and in pages, each read whole.
func staleListed(t *testing.T, r memory.Reindexer, m staleMemories) {
	ctx := context.Background()
	cur := reindexModel
	countStale(t, r, memory.Stale{Model: cur}, 5)
	countStale(t, r, memory.Stale{User: "ana", Model: cur, After: "mem_ffffffffffffffff"}, 3) // After does not count
	all, err := r.Stale(ctx, memory.Stale{Model: cur})
	if err != nil || entryIDs(all) != sortedIDs(m.none, m.old, m.unknown, m.bo, m.shared) {
		t.Fatalf("Stale = %s, %v; want %s", entryIDs(all), err, sortedIDs(m.none, m.old, m.unknown, m.bo, m.shared))
	}
	// Two pages of two walk ana's three.
	want := sortedIDs(m.none, m.old, m.unknown)
	p1, err1 := r.Stale(ctx, memory.Stale{User: "ana", Model: cur, Limit: 2})
	if err1 != nil || len(p1) != 2 {
		t.Fatalf("page 1 = %s, %v", entryIDs(p1), err1)
	}
	p2, err2 := r.Stale(ctx, memory.Stale{User: "ana", Model: cur, Limit: 2, After: p1[1].ID})
	if err2 != nil || entryIDs(append(p1, p2...)) != want {
		t.Fatalf("pages = %s + %s, %v; want %s", entryIDs(p1), entryIDs(p2), err2, want)
	}
	if p2[0].Text == "" || p2[0].Created.IsZero() {
		t.Fatalf("a stale entry is read whole: %+v", p2[0])
	}
}

// vectorsSet: SetVector on ana's stale memories (and on a gone one, no error) makes
// them current, read back with the vector and its model, text and times unchanged.
func vectorsSet(t *testing.T, s memory.Store, r memory.Reindexer, m staleMemories) {
	ctx := context.Background()
	cur := reindexModel
	for _, e := range []memory.Entry{m.none, m.old, m.unknown} {
		if err := r.SetVector(ctx, e.ID, vec(0, 1), cur); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.SetVector(ctx, "mem_0000000000000000", vec(0, 1), cur); err != nil {
		t.Fatalf("SetVector of a gone memory: %v", err)
	}
	countStale(t, r, memory.Stale{User: "ana", Model: cur}, 0)
	countStale(t, r, memory.Stale{Model: cur}, 2)
	list, err := s.ListMemory(ctx, memory.Filter{User: "ana"})
	if err != nil || len(list) != 4 {
		t.Fatalf("list = %d entries, %v", len(list), err)
	}
	for _, e := range list {
		if e.VectorModel != cur || len(e.Vector) != 4 || !e.Updated.Equal(t0) || !strings.HasPrefix(e.Text, "Ana ") {
			t.Fatalf("after SetVector: %+v", e)
		}
		if e.ID == m.none.ID && (e.Vector[0] != 1 || e.Vector[1] != float32(0.2)) {
			t.Fatalf("the stored vector reads back as %v", e.Vector)
		}
	}
}
