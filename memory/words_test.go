package memory

import "testing"

// TestEstimateDFIsExactBelowRareBelowAndScalesTheNewestShareAbove: a word read fewer than
// RareBelow times was read in full; at RareBelow, its share of the rows the reading spanned,
// times the collection.
func TestEstimateDFIsExactBelowRareBelowAndScalesTheNewestShareAbove(t *testing.T) {
	for _, c := range []struct {
		read        int
		lowest, top int64
		n, want     int
	}{
		{0, 0, 100_000, 100_000, 0},
		{RareBelow - 1, 1, 100_000, 100_000, RareBelow - 1},
		{RareBelow, 98_001, 100_000, 100_000, 20_000},  // 400 in the newest 2,000 rows: a fifth
		{RareBelow, 99_601, 100_000, 100_000, 100_000}, // in every row
		{RareBelow, 10, 5, 100, RareBelow},             // rows deleted under it: never below what was read
	} {
		if got := EstimateDF(c.read, c.lowest, c.top, c.n); got != c.want {
			t.Errorf("EstimateDF(%d, %d, %d, %d) = %d, want %d", c.read, c.lowest, c.top, c.n, got, c.want)
		}
	}
}

// TestBM25IDFIsFTS5s: a word in more than half the memories weighs 1e-6, as in FTS5.
func TestBM25IDFIsFTS5s(t *testing.T) {
	if w := bm25IDF(60, 100); w != 1e-6 {
		t.Fatalf("idf of a word in 60 of 100 = %g, want 1e-6", w)
	}
	if w, h := bm25IDF(1, 100), bm25IDF(10, 100); !(w > h && h > 0) {
		t.Fatalf("idf of 1 of 100 %g, of 10 of 100 %g: want the rarer heavier", w, h)
	}
}
