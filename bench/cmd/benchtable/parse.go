package main

import (
	"bufio"
	"io"
	"slices"
	"strconv"
	"strings"
)

// samples holds every value of every metric of every benchmark in a run, in the order
// the lines came: samples["BenchmarkWarmCall/sandbox"]["ns/op"] = one value per -count.
type samples map[string]map[string][]float64

// parse adds the result lines of r to s; other lines are ignored.
func (s samples) parse(r io.Reader) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		// A result line: name-GOMAXPROCS, iterations, then value/unit pairs.
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			if s[name] == nil {
				s[name] = map[string][]float64{}
			}
			s[name][f[i+1]] = append(s[name][f[i+1]], v)
		}
	}
	return sc.Err()
}

// stat is the median and range of one metric; n = 0 when the benchmark did not report it.
type stat struct {
	median, min, max float64
	n                int
}

func (s samples) stat(name, unit string) stat {
	vs := slices.Clone(s[name][unit])
	if len(vs) == 0 {
		return stat{}
	}
	slices.Sort(vs)
	med := vs[len(vs)/2]
	if len(vs)%2 == 0 {
		med = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
	}
	return stat{median: med, min: vs[0], max: vs[len(vs)-1], n: len(vs)}
}

// names are the benchmarks in s, sorted.
func (s samples) names() []string {
	out := make([]string, 0, len(s))
	for n := range s {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// ratio is the median and range over the rounds of a's unit divided by b's, paired by
// round (each round ran both once, one after the other): the spread of a ratio, which
// medians divided after the fact would hide.
func (s samples) ratio(a, b, unit string) stat {
	as, bs := s[a][unit], s[b][unit]
	var rs []float64
	for i := range min(len(as), len(bs)) {
		if bs[i] != 0 {
			rs = append(rs, as[i]/bs[i])
		}
	}
	if len(rs) == 0 {
		return stat{}
	}
	r := samples{"r": {"u": rs}}
	return r.stat("r", "u")
}
