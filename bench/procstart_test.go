package bench

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testbin"
)

// BenchmarkProcessStart is the process start row: one op runs `agenthost --help` with
// GODEBUG=inittrace=1, the start every run's process pays before it does anything.
// Reported: init-ms/op, the sum of every package's init (the runtime's trace, wall
// clock); cpu-ms/op, the process's user + system CPU; the heaviest package's init
// (top-init-ms/op, named in the log with the next four); and init-allocs/op, the
// allocations of every package's init, which no other process's load changes.
//
//	go test -run '^$' -bench ProcessStart -benchtime 20x ./bench/
func BenchmarkProcessStart(b *testing.B) {
	bin, err := testbin.Build(testbin.Agenthost)
	if err != nil {
		b.Fatal(err)
	}
	perPkg := map[string][]float64{}
	var total, cpu, top, allocs float64
	for b.Loop() {
		var stderr bytes.Buffer
		cmd := exec.Command(bin, "--help")
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			b.Fatalf("agenthost --help: %v\n%s", err, stderr.Bytes())
		}
		inits := parseInitTrace(b, stderr.Bytes())
		sum, most := 0.0, 0.0
		for pkg, in := range inits {
			sum += in.ms
			most = max(most, in.ms)
			allocs += in.allocs
			perPkg[pkg] = append(perPkg[pkg], in.ms)
		}
		total, top = total+sum, top+most
		cpu += float64(cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime()) / float64(time.Millisecond)
	}
	n := float64(b.N)
	b.ReportMetric(total/n, "init-ms/op")
	b.ReportMetric(cpu/n, "cpu-ms/op")
	b.ReportMetric(top/n, "top-init-ms/op")
	b.ReportMetric(allocs/n, "init-allocs/op")
	type pkgMedian struct {
		pkg string
		ms  float64
	}
	var heavy []pkgMedian
	for pkg, ms := range perPkg {
		slices.Sort(ms)
		heavy = append(heavy, pkgMedian{pkg, ms[len(ms)/2]})
	}
	slices.SortFunc(heavy, func(x, y pkgMedian) int { return -cmpFloat(x.ms, y.ms) })
	for _, h := range heavy[:min(5, len(heavy))] {
		b.Logf("init %-60s median %.2f ms", h.pkg, h.ms)
	}
}

// pkgInit is one package's line of the trace.
type pkgInit struct{ ms, allocs float64 }

// parseInitTrace reads the runtime's lines "init PKG @T ms, D ms clock, B bytes, A allocs"
// into package → D, A.
func parseInitTrace(b *testing.B, trace []byte) map[string]pkgInit {
	out := map[string]pkgInit{}
	sc := bufio.NewScanner(bytes.NewReader(trace))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 11 || f[0] != "init" || f[6] != "clock," || f[10] != "allocs" {
			continue
		}
		ms, err := strconv.ParseFloat(f[4], 64)
		allocs, err2 := strconv.ParseFloat(f[9], 64)
		if err != nil || err2 != nil {
			b.Fatalf("inittrace line %q: %v %v", sc.Text(), err, err2)
		}
		out[f[1]] = pkgInit{out[f[1]].ms + ms, out[f[1]].allocs + allocs}
	}
	if len(out) == 0 {
		b.Fatalf("no inittrace lines in:\n%s", trace)
	}
	return out
}

func cmpFloat(x, y float64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}
