package eval

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// datasetExts are the file name endings of datasets.
var datasetExts = []string{".jsonl", ".yaml", ".yml", ".json"}

// didYouMean names, for a dataset path that does not exist, the dataset beside it
// nearest in spelling ("; did you mean evals/smoke.yaml?"), or the datasets there when
// none is near ("; datasets in evals: a.jsonl, b.yaml"), or nothing.
func didYouMean(path string) string {
	dir := filepath.Dir(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && slices.Contains(datasetExts, strings.ToLower(filepath.Ext(e.Name()))) {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return ""
	}
	want := filepath.Base(path)
	best, bestD := "", 4 // at most 3 edits away
	for _, n := range names {
		if d := editDistance(strings.ToLower(want), strings.ToLower(n)); d < bestD {
			best, bestD = n, d
		}
	}
	if best != "" {
		return "; did you mean " + filepath.Join(dir, best) + "?"
	}
	if len(names) > 8 {
		names = append(names[:8], "…")
	}
	return "; datasets in " + dir + ": " + strings.Join(names, ", ")
}

// editDistance is the Levenshtein distance of a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur := make([]int, len(rb)+1)
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(rb)]
}
