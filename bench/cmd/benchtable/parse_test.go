package main

import (
	"strings"
	"testing"
)

func TestParseMedian(t *testing.T) {
	out := `goos: linux
BenchmarkWarmCall/sandbox-2   	   13056	     92279 ns/op	  241549 B/op	     148 allocs/op
BenchmarkWarmCall/sandbox-2   	   13056	     90000 ns/op	  241549 B/op	     148 allocs/op
BenchmarkWarmCall/sandbox-2   	   13056	     99000.5 ns/op	  241549 B/op	     150 allocs/op
BenchmarkSessions-2   	       5	 236801109 ns/op	      6940 B/idle-session	        71.53 peak-RSS-MiB
PASS
`
	s := samples{}
	if err := s.parse(strings.NewReader(out)); err != nil {
		t.Fatal(err)
	}
	got := s.stat("BenchmarkWarmCall/sandbox", "ns/op")
	if got != (stat{median: 92279, min: 90000, max: 99000.5, n: 3}) {
		t.Fatalf("ns/op stat = %+v", got)
	}
	if got := s.stat("BenchmarkSessions", "peak-RSS-MiB"); got.median != 71.53 || got.n != 1 {
		t.Fatalf("peak RSS stat = %+v", got)
	}
	s["x"] = map[string][]float64{"ns/op": {4, 1, 3, 2}}
	if got := s.stat("x", "ns/op").median; got != 2.5 {
		t.Fatalf("even median = %v, want 2.5", got)
	}
	if got := s.stat("missing", "ns/op"); got.n != 0 {
		t.Fatalf("missing = %+v", got)
	}
}

// A ratio pairs the two sides' values by round: its median and range are the rounds'
// ratios', not the medians' ratio (here 2 from medians, 1.5 from the rounds' 1, 1.5, 3).
func TestRatioPairsRounds(t *testing.T) {
	s := samples{
		"a": {"ns/op": {10, 30, 30}},
		"b": {"ns/op": {10, 20, 10}},
	}
	if got := s.ratio("a", "b", "ns/op"); got != (stat{median: 1.5, min: 1, max: 3, n: 3}) {
		t.Fatalf("ratio = %+v", got)
	}
	if got := paired(s, "a", "b"); got != "wall 1.50× (1.00–3.00)" {
		t.Fatalf("cell = %q", got)
	}
	if got := s.ratio("a", "missing", "ns/op"); got.n != 0 {
		t.Fatalf("missing side = %+v", got)
	}
}
