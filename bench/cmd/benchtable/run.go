package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"
)

// job is one `go test` invocation: its benchmarks share a process, so the ratios
// between them come from the same run.
type job struct {
	dir, bench, pkg string
	why             string
	benchtime       string // -benchtime, when the default does not suit the row
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
		// A fixed count: each size's setup (100,000 memories written, their index trained)
		// costs more than its runs.
		{dir: ".", bench: "^BenchmarkMemoryRecallVsN$", pkg: "./store/", why: "recall vs N (1k/10k/100k), words and hybrid", benchtime: "40x"},
		{dir: ".", bench: "^BenchmarkProcessStart$", pkg: "./bench/", why: "process start: package init of `agenthost --help`", benchtime: "20x"},
		// A fixed count: each op writes its session's history first (untimed).
		{dir: ".", bench: "^BenchmarkRunHistory$", pkg: "./bench/", why: "run start vs history (9/81/801 messages)", benchtime: "40x"},
		{dir: ".", bench: "^BenchmarkWorkflowStep$", pkg: "./bench/", why: "workflow step vs direct pipeline call"},
		// A fixed count: each op starts a server and its provider.
		{dir: ".", bench: "^BenchmarkServeIdle$", pkg: "./bench/", why: "idle serve RSS", benchtime: "5x"},
	}
}

// selectJobs keeps the jobs whose benchmark pattern or description matches only ("" keeps all).
func selectJobs(all []job, only string) ([]job, error) {
	if only == "" {
		return all, nil
	}
	re, err := regexp.Compile(only)
	if err != nil {
		return nil, err
	}
	var out []job
	for _, j := range all {
		if re.MatchString(j.bench) || re.MatchString(j.why) {
			out = append(out, j)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-only %q matches no job", only)
	}
	return out, nil
}

// args runs the job's benchmarks once each (-count 1): run calls it once a round, so the
// two sides of a ratio alternate over the rounds (A B, A B, ...) instead of running each
// side's repetitions back to back, where drift on a shared machine lands in the ratio.
func (j job) args() []string {
	a := []string{"test", "-run", "^$", "-bench", j.bench, "-benchmem", "-count", "1"}
	if j.benchtime != "" {
		a = append(a, "-benchtime", j.benchtime)
	}
	return append(a, j.pkg)
}

// command is the job as a shell line, for BENCHMARKS.md.
func (j job) command() string {
	line := "go " + strings.Join(quote(j.args()), " ")
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

// run executes the job once (one round), echoing its output to stderr as it comes and to
// raw, and adds its results to s. It returns the load average after the job.
func (j job) run(round int, s samples, raw io.Writer) (string, error) {
	var out bytes.Buffer
	fmt.Fprintf(raw, "$ %s\n# round %d; load average before: %s\n", j.command(), round, loadAvg())
	fmt.Fprintf(os.Stderr, "benchtable: round %d: %s — %s\n", round, j.why, j.command())
	cmd := exec.Command("go", j.args()...)
	cmd.Dir = j.dir
	cmd.Stdout = io.MultiWriter(&out, raw, os.Stderr)
	cmd.Stderr = io.MultiWriter(raw, os.Stderr)
	start := time.Now()
	err := cmd.Run()
	load := loadAvg()
	fmt.Fprintf(raw, "# took %s; load average after: %s\n\n", time.Since(start).Round(time.Second), load)
	if err != nil {
		return load, fmt.Errorf("%s: %w", j.command(), err)
	}
	return load, s.parse(&out)
}
