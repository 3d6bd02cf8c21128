package memory

import (
	"context"
	"math"
	"slices"
	"strings"
)

// A word search that ranks every memory holding any of the query's words costs what the
// most common word costs: at 100,000 memories of one user a word in a third of them is
// ranked 30,000 times for five hits. Both stores therefore search in two steps (the
// rule below, one for both): the rare words first, ranked by the engine and cut to a few
// candidates before anything is read, then those candidates ranked again by all the
// words. A memory that holds only common words scores below one that holds a rare word
// (the engines weigh a word by its rarity), so the top hits are the same but for ties;
// store/memoryrecall_test.go measures how often they differ.
const (
	// RareBelow is how many of a scope's memories a word may match to be rare: counting
	// stops there, so counting costs at most that many steps a word.
	RareBelow = 400
	// RareBudget bounds the matches of the rare words searched together: the first step
	// ranks at most about that many memories.
	RareBudget = 800
	// Candidates is how many times the limit the first step keeps for the second.
	Candidates = 4
	// ScopeWhole is how many memories a search may see for them all to be ranked in Go
	// (RankWhole) instead: below it, a user among many others pays for their own
	// memories, not for what the common words match across every user's. Counting stops
	// there, so counting a large scope costs at most that many steps.
	ScopeWhole = 1000
)

// RankWhole ranks docs, every memory a search may see (fewer than ScopeWhole), by
// RankBM25 of terms in a collection of n memories. The weight of each word a doc holds is
// its number of memories in the whole collection, df (exact below RareBelow, the store's
// estimate above: see the stores' df), as the engine weighs it. Words no doc holds score
// nothing and are not counted.
func RankWhole(ctx context.Context, docs []Doc, terms []string, n int, df func(ctx context.Context, term string) (int, error)) ([]Scored, error) {
	held := map[string]bool{}
	for _, t := range terms {
		held[t] = false
	}
	for _, d := range docs {
		for _, w := range d.Words {
			if _, ok := held[w]; ok {
				held[w] = true
			}
		}
	}
	var counted []string
	var dfs []int
	for _, t := range terms {
		if !held[t] {
			continue
		}
		c, err := df(ctx, t)
		if err != nil {
			return nil, err
		}
		counted, dfs = append(counted, t), append(dfs, c)
	}
	return RankBM25(docs, terms, counted, dfs, max(n, len(docs))), nil
}

// EstimateDF is a word's number of memories from how many of the newest it is in: read
// of the highest rowids down to lowest, of rowids up to top. Below RareBelow read, that
// is every memory holding it; at RareBelow, the word's share of the rows lowest..top,
// times n (memories are spread evenly enough over time for a word's weight).
func EstimateDF(read int, lowest, top int64, n int) int {
	if read < RareBelow || top < lowest {
		return read
	}
	return max(read, int(float64(read)*float64(n)/float64(top-lowest+1)))
}

// RareTerms is the words of terms a search ranks first, with how many memories each
// matches: those matching fewer than RareBelow memories (count says how many, counting
// at most limit), rarest first, as many as fit in RareBudget matches together (the
// rarest always). None when no rare word matches anything: the search then ranks all
// matches of the common words.
func RareTerms(ctx context.Context, terms []string, count func(ctx context.Context, term string, limit int) (int, error)) ([]string, []int, error) {
	type counted struct {
		term string
		n    int
	}
	var rare []counted
	for _, t := range terms {
		n, err := count(ctx, t, RareBelow)
		if err != nil {
			return nil, nil, err
		}
		if n < RareBelow {
			rare = append(rare, counted{t, n})
		}
	}
	slices.SortStableFunc(rare, func(a, b counted) int { return a.n - b.n })
	var out []string
	var df []int
	total := 0
	for _, c := range rare {
		if total+c.n > RareBudget && len(out) > 0 {
			break
		}
		total += c.n
		out, df = append(out, c.term), append(df, c.n)
	}
	if total == 0 {
		return nil, nil, nil
	}
	return out, df, nil
}

// Doc is a candidate of a word search: its id and the words its index holds (for a
// sealed store, the keyed hashes of its words).
type Doc struct {
	ID    string
	Words []string
}

// RankBM25 ranks docs by Okapi BM25 (k1 1.2, b 0.75, as the engines) of terms in a
// collection of n memories, best first, leaving out docs holding none of the terms. The
// rare terms' document frequencies are rareDF (RareTerms'). A common word's (it matches
// RareBelow or more, how many was not counted) is estimated from the docs: they are the
// memories holding a rare word, so the share of them holding the common word is about
// its share of all memories (at least RareBelow). The average length is the docs' own.
func RankBM25(docs []Doc, terms, rare []string, rareDF []int, n int) []Scored {
	const k1, b = 1.2, 0.75
	if len(docs) == 0 {
		return nil
	}
	idf := make(map[string]float64, len(terms))
	holding := make(map[string]int, len(terms))
	for _, t := range terms {
		idf[t] = 0
	}
	seen := map[string]bool{}
	for _, d := range docs {
		clear(seen)
		for _, w := range d.Words {
			if _, ok := idf[w]; ok && !seen[w] {
				seen[w] = true
				holding[w]++
			}
		}
	}
	for _, t := range terms {
		idf[t] = bm25IDF(max(RareBelow, holding[t]*n/len(docs)), n)
	}
	for i, t := range rare {
		idf[t] = bm25IDF(rareDF[i], n)
	}
	total := 0
	for _, d := range docs {
		total += len(d.Words)
	}
	avg := float64(total) / float64(len(docs))
	out := make([]Scored, 0, len(docs))
	tf := map[string]int{}
	for _, d := range docs {
		clear(tf)
		for _, w := range d.Words {
			if _, ok := idf[w]; ok {
				tf[w]++
			}
		}
		var s float64
		for t, f := range tf {
			s += idf[t] * float64(f) * (k1 + 1) / (float64(f) + k1*(1-b+b*float64(len(d.Words))/max(avg, 1)))
		}
		if s > 0 {
			out = append(out, Scored{ID: d.ID, Score: s})
		}
	}
	slices.SortStableFunc(out, func(a, b Scored) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// bm25IDF is a word's weight as SQLite's FTS5 computes it (a word in more than half the
// memories weighs almost nothing, never less than 1e-6), so a ranking in Go orders what
// the engine's would.
func bm25IDF(df, n int) float64 {
	d := float64(df)
	return max(math.Log((float64(max(n, df))-d+0.5)/(d+0.5)), 1e-6)
}
