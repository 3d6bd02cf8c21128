package memory

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// CosineUnit (one pass over the stored bytes, the query's length computed once) is
// Cosine, to float32 precision, and 0 for vectors of another length or all zeros.
func TestCosineUnitIsCosine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, d := range []int{1, 3, 384} {
		a, b := make([]float32, d), make([]float32, d)
		for i := range a {
			a[i], b[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
		if got, want := CosineUnit(EncodeVector(a), Unit(b)), Cosine(a, b); math.Abs(got-want) > 1e-5 {
			t.Fatalf("%d dims: CosineUnit %v, Cosine %v", d, got, want)
		}
	}
	if CosineUnit(EncodeVector([]float32{1, 2}), Unit([]float32{1, 2, 3})) != 0 || CosineUnit(EncodeVector([]float32{0, 0}), Unit([]float32{1, 2})) != 0 {
		t.Fatal("another length or a zero vector is not similar at all")
	}
}

// Training is deterministic for a seed, puts vectors of two far apart groups in
// different lists, and Nearest orders the lists by closeness.
func TestTrainIVFSeparatesGroupsDeterministically(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var vs [][]float32
	for i := range 400 {
		v := make([]float32, 8)
		v[i%2] = 10 // two groups: along axis 0 and along axis 1
		for j := range v {
			v[j] += float32(rng.NormFloat64())
		}
		vs = append(vs, v)
	}
	x, y := TrainIVF(vs, 2, 9), TrainIVF(vs, 2, 9)
	if !slices.Equal(x.Centroids, y.Centroids) || x.Len() != 2 || x.Dims != 8 {
		t.Fatalf("two trainings with one seed differ, or wrong shape: %d lists of %d", x.Len(), x.Dims)
	}
	a, b := x.Assign(vs[0]), x.Assign(vs[1])
	if a == b {
		t.Fatal("vectors of two far apart groups share a list")
	}
	for i, v := range vs {
		if x.Assign(v) != []int{a, b}[i%2] {
			t.Fatalf("vector %d is not in its group's list", i)
		}
	}
	if n := x.Nearest(vs[1], 2); len(n) != 2 || n[0] != b {
		t.Fatalf("Nearest %v, want %d first", n, b)
	}
	if x.Nearest(make([]float32, 3), 2) != nil {
		t.Fatal("a vector of another length has nearest lists")
	}
	got, err := DecodeIVF(EncodeIVF(x), 8)
	if err != nil || !slices.Equal(got.Centroids, x.Centroids) {
		t.Fatalf("encoded index does not decode to itself: %v", err)
	}
	if _, err := DecodeIVF([]byte{1, 2, 3}, 8); err == nil {
		t.Fatal("a truncated index decodes")
	}
}

// RareTerms keeps the words under RareBelow matches, rarest first, within RareBudget
// (the rarest always), and none when the rare words match nothing.
func TestRareTermsKeepsTheRareWithinTheBudget(t *testing.T) {
	counts := map[string]int{"common": RareBelow, "a": RareBudget/2 - 10, "b": 10, "c": RareBudget/2 - 5, "d": RareBudget/2 - 2, "none": 0}
	count := func(_ context.Context, term string, limit int) (int, error) { return min(counts[term], limit), nil }
	rare, df, err := RareTerms(context.Background(), []string{"common", "d", "a", "b", "c", "none"}, count)
	if err != nil || !slices.Equal(rare, []string{"none", "b", "a", "c"}) || !slices.Equal(df, []int{0, 10, counts["a"], counts["c"]}) {
		t.Fatalf("rare %v %v %v, want [none b a c] and their counts (d is past the budget)", rare, df, err)
	}
	if rare, _, _ := RareTerms(context.Background(), []string{"common", "none"}, count); rare != nil {
		t.Fatalf("rare %v, want none: the rare word matches nothing", rare)
	}
}

// BM25 over the candidates ranks a memory with a rare word above ones with common words
// only, a memory with both words above one with the rare word alone, and leaves out
// memories with none of the words.
func TestRankBM25RanksRareWordsFirst(t *testing.T) {
	docs := []Doc{
		{ID: "common", Words: []string{"coffee", "morning", "likes"}},
		{ID: "rare", Words: []string{"espresso", "machine", "broke"}},
		{ID: "both", Words: []string{"espresso", "coffee", "daily"}},
		{ID: "none", Words: []string{"tea"}},
	}
	got := RankBM25(docs, []string{"espresso", "coffee"}, []string{"espresso"}, []int{2}, 10_000)
	var ids []string
	for _, s := range got {
		ids = append(ids, s.ID)
	}
	if !slices.Equal(ids, []string{"both", "rare", "common"}) {
		t.Fatalf("ranking %v, want [both rare common]", ids)
	}
}
