package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/store/seal"
)

// readCounting is a context under which rankScope adds the memories it reads to *n.
func readCounting(n *int) context.Context {
	return context.WithValue(context.Background(), scopeReadKey{}, n)
}

// exactWords is exact search: FTS5's bm25 over every match of the words in the scopes
// q may see.
func exactWords(t *testing.T, s *SQLite, q memory.Query) []string {
	t.Helper()
	match := "{scope} : (" + memory.FTS5Query(visibleScopes(q)) + ") AND {terms} : (" + memory.FTS5Query(memory.Terms(q.Text)) + ")"
	hits, err := s.rankWords(context.Background(), q, match)
	if err != nil {
		t.Fatal(err)
	}
	return hitIDs(hits)
}

func hitIDs(hits []memory.Hit) []string {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	return ids
}

// TestMemorySearchOfAUserWithFewAmongManyUsersReadsOnlyTheirScope: 10,000 memories of
// 100 users, the common words in thousands of them; a search of one user (100 memories)
// reads those 100 and no other, and finds exact search's top 5, for queries of common,
// middling and rare words, of common words alone, and with invalid UTF-8 in the text.
func TestMemorySearchOfAUserWithFewAmongManyUsersReadsOnlyTheirScope(t *testing.T) {
	s, err := OpenSQLite(filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fillMemories(t, s, 10_000, 100, nil)
	if n, err := s.countMatch(context.Background(), `{terms} : "w3"`, 100_000); err != nil || n < 1000 {
		t.Fatalf("w3 in %d memories (%v): the test needs a word common across users", n, err)
	}
	rng := rand.New(rand.NewPCG(5, 3))
	var texts []string
	for range 20 {
		texts = append(texts, fmt.Sprintf("w%d w%d w%d", 1+rng.IntN(5), 20+rng.IntN(80), 300+rng.IntN(1500)))
	}
	texts = append(texts, "w1 w2 w3", recallQuery, "w3 \xff\xfe w17 \xc3", "w5\x00w8")
	for _, text := range texts {
		q := memory.Query{User: "u7", Agent: "helper", Text: text, Limit: 5}
		read := 0
		hits, err := s.searchWords(readCounting(&read), q)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if read != 100 {
			t.Fatalf("%q: the search read %d memories, want the user's 100", text, read)
		}
		for _, h := range hits {
			if h.User != "u7" {
				t.Fatalf("%q: a hit of %s, want u7's alone", text, h.User)
			}
		}
		if want := exactWords(t, s, q); len(hits) == 0 || !slices.Equal(hitIDs(hits), want) {
			t.Fatalf("%q: hits %v, exact search %v", text, hitIDs(hits), want)
		}
	}
	read := 0
	if hits, err := s.searchWords(readCounting(&read), memory.Query{User: "u7", Text: "\xff\xfe\xfd"}); err != nil || hits != nil || read != 0 {
		t.Fatalf("a query of no words: %v, %v, read %d; want nothing read", hits, err, read)
	}
}

// TestMemorySearchOfALargeScopeRanksInTheEngine: a user with memory.ScopeWhole memories or
// more is not read whole (the rare words first, or the engine's ranking), and still finds
// five hits.
func TestMemorySearchOfALargeScopeRanksInTheEngine(t *testing.T) {
	s, err := OpenSQLite(filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fillMemories(t, s, memory.ScopeWhole+200, 1, nil)
	for _, text := range []string{recallQuery, "w1 w2 w3"} {
		read := 0
		hits, err := s.searchWords(readCounting(&read), memory.Query{User: "u0", Agent: "helper", Text: text, Limit: 5})
		if err != nil || len(hits) != 5 || read != 0 {
			t.Fatalf("%q: %d hits (%v), %d memories read whole; want 5 and none", text, len(hits), err, read)
		}
	}
}

// TestSealedMemorySearchOfAFewFindsWhatAPlainStoreFinds: a sealed store indexes
// keyed hashes of the words; a search of a user with few memories among others' reads
// only that user's and ranks them as a plain store holding the same memories does.
func TestSealedMemorySearchOfAFewFindsWhatAPlainStoreFinds(t *testing.T) {
	key, err := seal.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := seal.Parse(key)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := OpenSQLiteWith(filepath.Join(t.TempDir(), "sealed.db"), Options{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	defer sealed.Close()
	plain, err := OpenSQLite(filepath.Join(t.TempDir(), "plain.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(9, 4))
	zipf := rand.NewZipf(rng, 1.1, 1, 199)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 240 {
		text := ""
		for range 8 {
			text += fmt.Sprintf("w%d ", zipf.Uint64())
		}
		e := memory.Entry{ID: fmt.Sprintf("mem_%04d", i), User: fmt.Sprintf("u%d", i%8), Kind: memory.KindFact, Text: text, Created: at, Updated: at}
		if i%40 == 0 { // the agent's own, shared with every user
			e.User, e.Agent = "", "helper"
		}
		for _, s := range []*SQLite{sealed, plain} {
			if err := s.AddMemory(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, text := range []string{"w1 w7 w60", "w0 w2", "w150 w3", "w1 w2 w3 w4 w5 w6"} {
		q := memory.Query{User: "u3", Agent: "helper", Text: text, Limit: 5}
		var read [2]int
		var ids [2][]string
		for i, s := range []*SQLite{sealed, plain} {
			hits, err := s.searchWords(readCounting(&read[i]), q)
			if err != nil {
				t.Fatal(err)
			}
			ids[i] = hitIDs(hits)
		}
		// u3's 30 memories and the agent's 6.
		if read != [2]int{36, 36} || len(ids[1]) == 0 || !slices.Equal(ids[0], ids[1]) {
			t.Fatalf("%q: sealed %v, plain %v; read %v, want 36 each", text, ids[0], ids[1], read)
		}
	}
}
