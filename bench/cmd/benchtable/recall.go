package main

import "fmt"

// recallRows are the recall vs N rows: one recall (top 5) of one user's memories at
// 1,000, 10,000 and 100,000, by words alone and hybrid (words and a 384-dimension
// vector through the vector index), in CPU a recall, each size against 1,000; the
// targets are issue 53's at 100,000, with recall@5 against exact search beside.
func recallRows(s samples) []row {
	var rows []row
	for _, r := range []struct {
		kind, label string
		target      float64
	}{{"words", "words", 20e6}, {"hybrid", "hybrid (384-d vectors, index)", 30e6}} {
		base := "BenchmarkMemoryRecallVsN/" + r.kind + "/1k"
		c1 := s.stat(base, "cpu-ns/op").median
		for _, n := range []string{"100k", "10k"} {
			name := "BenchmarkMemoryRecallVsN/" + r.kind + "/" + n
			c := s.stat(name, "cpu-ns/op").median
			ours := dur(c) + " CPU"
			if rc := s.stat(name, "recall@5"); rc.n > 0 {
				ours += fmt.Sprintf(", recall@5 %.2f", rc.median)
			}
			target, met := "–", ""
			if n == "100k" {
				target = "≤ " + dur(r.target) + " CPU, recall@5 ≥ 0.95"
				if r.kind == "words" {
					target = "≤ " + dur(r.target) + " CPU"
				}
				rc := s.stat(name, "recall@5")
				met = check(c <= r.target && (r.kind == "words" || rc.median >= 0.95), c, c1)
			}
			rows = append(rows, row{"Recall vs N, " + r.label + ": " + n + " vs 1k memories of one user (CPU a recall)",
				ours, dur(c1) + " CPU", paired(s, name, base), target, met, map[string]string{"words": "186–197 ms (100k, issue 53)", "hybrid": "815 ms (100k, issue 53)"}[r.kind]})
		}
	}
	return rows
}
