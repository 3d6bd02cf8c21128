package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// job is one `go test` invocation: its benchmarks share a process, so the ratios
// between them come from the same run.
type job struct {
	dir, bench, pkg string
	why             string
}

// jobs are the five processes of a table: the rows of bench/, the 1,000 sessions
// alone (peak RSS is per process), the eino comparison (its own module), the start
// of a manifest of the fourteen example plugins (plugins/, which builds them), and
// memory recall in a SQLite file (store/).
func jobs() []job {
	return []job{
		{dir: ".", bench: "^Benchmark(WarmCall|Start|LoopStep)$", pkg: "./bench/", why: "warm call, start, loop step"},
		{dir: ".", bench: "^BenchmarkSessions$", pkg: "./bench/", why: "1,000 sessions, alone for its peak RSS"},
		{dir: "bench/eino", bench: "^BenchmarkReAct$", pkg: ".", why: "agenthost vs eino"},
		{dir: ".", bench: "^Benchmark(LoadExamples|FreshInstance)", pkg: "./plugins/", why: "fourteen plugins from a warm cache, one by one and at once; a fresh instance of calc, pre-initialised or not"},
		{dir: ".", bench: "^BenchmarkMemoryRecall$", pkg: "./store/", why: "memory recall at 10k and 100k memories"},
	}
}

func (j job) args(count int) []string {
	return []string{"test", "-run", "^$", "-bench", j.bench, "-benchmem", "-count", strconv.Itoa(count), j.pkg}
}

// command is the job as a shell line, for BENCHMARKS.md.
func (j job) command(count int) string {
	line := "go " + strings.Join(quote(j.args(count)), " ")
	if j.dir != "." {
		line = "(cd " + j.dir + " && " + line + ")"
	}
	return line
}

func quote(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if strings.ContainsAny(a, "^$|()") {
			out[i] = "'" + a + "'"
		}
	}
	return out
}

// run executes the job, echoing its output to stderr as it comes and to raw, and adds
// its results to s. It returns the load average after the job.
func (j job) run(count int, s samples, raw io.Writer) (string, error) {
	var out bytes.Buffer
	fmt.Fprintf(raw, "$ %s\n# load average before: %s\n", j.command(count), loadAvg())
	fmt.Fprintf(os.Stderr, "benchtable: %s — %s\n", j.why, j.command(count))
	cmd := exec.Command("go", j.args(count)...)
	cmd.Dir = j.dir
	cmd.Stdout = io.MultiWriter(&out, raw, os.Stderr)
	cmd.Stderr = io.MultiWriter(raw, os.Stderr)
	start := time.Now()
	err := cmd.Run()
	load := loadAvg()
	fmt.Fprintf(raw, "# took %s; load average after: %s\n\n", time.Since(start).Round(time.Second), load)
	if err != nil {
		return load, fmt.Errorf("%s: %w", j.command(count), err)
	}
	return load, s.parse(&out)
}
