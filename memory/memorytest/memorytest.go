// Package memorytest is the conformance suite every memory.Store passes: the stores'
// tests run it against a real SQLite file and a real PostgreSQL server.
package memorytest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/memory"
)

// Run runs the suite; open returns a new, empty store.
func Run(t *testing.T, open func(t *testing.T) memory.Store) {
	t.Run("SearchFindsTheUsersFactsBestFirst", func(t *testing.T) { searchBestFirst(t, open(t)) })
	t.Run("AUserNeverSeesAnotherUsersMemory", func(t *testing.T) { neverCrossesUsers(t, open(t)) })
	t.Run("AnAgentsSharedMemoryStaysWithTheAgent", func(t *testing.T) { agentShared(t, open(t)) })
	t.Run("SearchSyntaxInAQueryIsTakenAsWords", func(t *testing.T) { injection(t, open(t)) })
	t.Run("DeleteNamesSomeoneOrFails", func(t *testing.T) { deletes(t, open(t)) })
	t.Run("BadEntriesAreRefused", func(t *testing.T) { refused(t, open(t)) })
	t.Run("ListIsNewestFirstAndFiltersByKind", func(t *testing.T) { lists(t, open(t)) })
	t.Run("SimilarityFindsWhatSharesNoWord", func(t *testing.T) { hybrid(t, open(t)) })
	t.Run("ReindexWalksStaleVectorsAndFillsThem", func(t *testing.T) { reindex(t, open(t)) })
}

// vec is a unit vector along axis i of 4, plus a little of axis j.
func vec(i, j int) []float32 {
	v := make([]float32, 4)
	v[i] = 1
	v[j] += 0.2
	return v
}

// With a query vector, a memory sharing no word with the query but near it in meaning
// (its vector) is found; one with words and a near vector ranks first; another user's
// memory with the very same vector is never returned; a stored vector reads back.
func hybrid(t *testing.T, s memory.Store) {
	ctx := context.Background()
	put := func(user, text string, v []float32, at time.Duration) {
		e, err := memory.New(user, "", memory.KindFact, text, t0.Add(at))
		if err != nil {
			t.Fatal(err)
		}
		e.Vector = v
		if err := s.AddMemory(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	put("ana", "Ana's flat is in Lisbon", vec(0, 1), 0)
	put("ana", "Ana owns a bicycle", vec(2, 3), time.Minute)
	put("ana", "Ana rents in Portugal", vec(0, 2), 2*time.Minute)
	put("ana", "no vector here about housing", nil, 3*time.Minute)
	put("bo", "Bo's flat is in Porto", vec(0, 1), 4*time.Minute)
	got := search(t, s, memory.Query{User: "ana", Text: "where is her flat", Vector: vec(0, 1), Limit: 2})
	want := []string{"Ana's flat is in Lisbon", "Ana rents in Portugal"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("hybrid search = %q, want %q", got, want)
	}
	// Similarity alone (no word matches) still finds, and never crosses users.
	got = search(t, s, memory.Query{User: "ana", Text: "zzz", Vector: vec(0, 1)})
	if len(got) == 0 || got[0] != "Ana's flat is in Lisbon" || strings.Contains(strings.Join(got, "|"), "Bo") || strings.Contains(strings.Join(got, "|"), "no vector") {
		t.Fatalf("similarity search = %q", got)
	}
	// A vector of another length is not compared (a changed embedding model).
	if got := search(t, s, memory.Query{User: "ana", Text: "zzz", Vector: []float32{1, 0}}); len(got) != 0 {
		t.Fatalf("a 2-dimensional query matched 4-dimensional memories: %q", got)
	}
	list, err := s.ListMemory(ctx, memory.Filter{User: "ana"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list {
		if e.Text == "Ana owns a bicycle" && (len(e.Vector) != 4 || e.Vector[2] != 1 || e.Vector[3] != float32(0.2)) {
			t.Fatalf("vector read back as %v", e.Vector)
		}
	}
}

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func add(t *testing.T, s memory.Store, user, agent string, kind memory.Kind, text string, at time.Duration) memory.Entry {
	t.Helper()
	e, err := memory.New(user, agent, kind, text, t0.Add(at))
	if err != nil {
		t.Fatal(err)
	}
	e.Metadata = map[string]string{"source": "test"}
	e.Session, e.Run = "ses_1", "run_1"
	if err := s.AddMemory(context.Background(), e); err != nil {
		t.Fatalf("add %q: %v", text, err)
	}
	return e
}

func search(t *testing.T, s memory.Store, q memory.Query) []string {
	t.Helper()
	hits, err := s.SearchMemory(context.Background(), q)
	if err != nil {
		t.Fatalf("search %+v: %v", q, err)
	}
	var out []string
	for _, h := range hits {
		out = append(out, h.Text)
	}
	return out
}

func searchBestFirst(t *testing.T, s memory.Store) {
	add(t, s, "ana", "", memory.KindFact, "Ana drinks green tea every morning", 0)
	add(t, s, "ana", "", memory.KindFact, "Ana's cat is called Miso", time.Minute)
	add(t, s, "ana", "", memory.KindFact, "Ana likes tea from Japan, green or roasted", 2*time.Minute)
	got := search(t, s, memory.Query{User: "ana", Agent: "helper", Text: "which green tea from Japan?"})
	want := []string{"Ana likes tea from Japan, green or roasted", "Ana drinks green tea every morning"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("search = %q, want %q", got, want)
	}
	if got := search(t, s, memory.Query{User: "ana", Agent: "helper", Text: "tea", Limit: 1}); len(got) != 1 {
		t.Fatalf("Limit 1 gave %q", got)
	}
	if got := search(t, s, memory.Query{User: "ana", Agent: "helper", Text: "the of and ?!"}); len(got) != 0 {
		t.Fatalf("a query without words found %q", got)
	}
	hits, _ := s.SearchMemory(context.Background(), memory.Query{User: "ana", Text: "cat"})
	if len(hits) != 1 || hits[0].Metadata["source"] != "test" || hits[0].Session != "ses_1" || hits[0].Run != "run_1" ||
		!hits[0].Created.Equal(t0.Add(time.Minute)) || hits[0].Kind != memory.KindFact || hits[0].User != "ana" {
		t.Fatalf("hit = %+v, want the cat entry with all its fields", hits)
	}
}

func neverCrossesUsers(t *testing.T, s memory.Store) {
	add(t, s, "ana", "", memory.KindFact, "the door code is 4711", 0)
	add(t, s, "ana", "helper", memory.KindFact, "the door code at work is 1234", 0)
	for _, q := range []memory.Query{
		{User: "bob", Agent: "helper", Text: "door code 4711 1234"},
		{User: "", Agent: "helper", Text: "door code"},
		{User: "ANA", Agent: "helper", Text: "door code"},
		{User: "ana%", Agent: "helper", Text: "door code"},
	} {
		if got := search(t, s, q); len(got) != 0 {
			t.Fatalf("%+v saw %q", q, got)
		}
	}
	if got := search(t, s, memory.Query{User: "ana", Agent: "other", Text: "door code"}); len(got) != 1 || got[0] != "the door code is 4711" {
		t.Fatalf("ana with another agent saw %q, want only her agent-free entry", got)
	}
}

func agentShared(t *testing.T, s memory.Store) {
	add(t, s, "", "helper", memory.KindFact, "the office opens at nine", 0)
	for _, u := range []string{"ana", "bob", ""} {
		if got := search(t, s, memory.Query{User: u, Agent: "helper", Text: "office"}); len(got) != 1 {
			t.Fatalf("user %q of helper saw %q", u, got)
		}
	}
	if got := search(t, s, memory.Query{User: "ana", Agent: "other", Text: "office"}); len(got) != 0 {
		t.Fatalf("another agent saw %q", got)
	}
}

func injection(t *testing.T, s memory.Store) {
	add(t, s, "ana", "", memory.KindFact, "tea with milk", 0)
	add(t, s, "bob", "", memory.KindFact, "bob's secret tea", 0)
	for _, text := range []string{`tea" OR user:bob`, `tea*) NEAR(secret`, `'; DROP TABLE memories; --tea`, `text:tea ^ - !! & | <-> :*`, "tea\x00\xff"} {
		got := search(t, s, memory.Query{User: "ana", Text: text})
		if len(got) != 1 || got[0] != "tea with milk" {
			t.Fatalf("query %q = %q, want ana's tea only", text, got)
		}
	}
}

func deletes(t *testing.T, s memory.Store) {
	ctx := context.Background()
	a := add(t, s, "ana", "", memory.KindFact, "one", 0)
	add(t, s, "ana", "helper", memory.KindFact, "two", 0)
	add(t, s, "bob", "", memory.KindFact, "three", 0)
	if _, err := s.DeleteMemory(ctx, memory.Filter{}); !errors.Is(err, memory.ErrEmptyFilter) {
		t.Fatalf("empty filter: %v", err)
	}
	if n, err := s.DeleteMemory(ctx, memory.Filter{User: "bob", ID: a.ID}); err != nil || n != 0 {
		t.Fatalf("bob deleting ana's entry = %d, %v; want 0", n, err)
	}
	if n, err := s.DeleteMemory(ctx, memory.Filter{ID: a.ID}); err != nil || n != 1 {
		t.Fatalf("delete by id = %d, %v", n, err)
	}
	add(t, s, "ana", "", memory.KindPreference, "four", 0)
	if n, err := s.DeleteMemory(ctx, memory.Filter{User: "ana"}); err != nil || n != 2 {
		t.Fatalf("erase ana = %d, %v; want 2", n, err)
	}
	left, _ := s.ListMemory(ctx, memory.Filter{User: "bob"})
	if len(left) != 1 || left[0].Text != "three" {
		t.Fatalf("bob's entries after erasing ana: %+v", left)
	}
}

func refused(t *testing.T, s memory.Store) {
	ctx := context.Background()
	for name, e := range map[string]memory.Entry{
		"huge":    {ID: memory.NewID(), User: "ana", Kind: memory.KindFact, Text: strings.Repeat("x", memory.MaxText+1)},
		"no one":  {ID: memory.NewID(), Kind: memory.KindFact, Text: "x"},
		"utf8":    {ID: memory.NewID(), User: "ana", Kind: memory.KindFact, Text: "\xff\xfe"},
		"kind":    {ID: memory.NewID(), User: "ana", Kind: "secret", Text: "x"},
		"no text": {ID: memory.NewID(), User: "ana", Kind: memory.KindFact},
		"nul":     {ID: memory.NewID(), User: "ana", Kind: memory.KindFact, Text: "a\x00b"},
	} {
		if err := s.AddMemory(ctx, e); err == nil {
			t.Errorf("%s entry accepted", name)
		}
	}
	if got, _ := s.ListMemory(ctx, memory.Filter{User: "ana"}); len(got) != 0 {
		t.Fatalf("refused entries stored: %+v", got)
	}
}

func lists(t *testing.T, s memory.Store) {
	ctx := context.Background()
	add(t, s, "ana", "", memory.KindFact, "old", 0)
	add(t, s, "ana", "", memory.KindPreference, "answers in French", time.Hour)
	add(t, s, "ana", "", memory.KindFact, "new", 2*time.Hour)
	got, err := s.ListMemory(ctx, memory.Filter{User: "ana"})
	if err != nil || len(got) != 3 || got[0].Text != "new" || got[2].Text != "old" {
		t.Fatalf("list = %+v, %v", got, err)
	}
	got, _ = s.ListMemory(ctx, memory.Filter{User: "ana", Kind: memory.KindPreference})
	if len(got) != 1 || got[0].Text != "answers in French" {
		t.Fatalf("preferences = %+v", got)
	}
	got, _ = s.ListMemory(ctx, memory.Filter{User: "ana", Limit: 2})
	if len(got) != 2 {
		t.Fatalf("limit 2 = %d entries", len(got))
	}
	if got := search(t, s, memory.Query{User: "ana", Text: "french old", Kind: memory.KindPreference}); len(got) != 1 {
		t.Fatalf("kind-limited search = %q", got)
	}
}
