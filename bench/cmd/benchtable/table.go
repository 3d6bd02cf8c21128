package main

import (
	"fmt"
	"math"
	"strings"
)

// row is one line of the summary: agenthost's figure, its comparison's, their ratio
// and the target the ratio (or the figure) must meet.
type row struct {
	what, ours, theirs, ratio, target, met string
	before                                 string // the ours (or ratio) of the previous table
}

// beforeRun names the table the before column comes from: the last `make bench` before
// issue 20's changes. Its figures are typed in here, since a run cannot measure code
// it no longer has.
const beforeRun = "2026-11-22 03:10 UTC, commit 6965f4b"

// Benchmark names of the rows.
const (
	warmSandbox  = "BenchmarkWarmCall/sandbox"
	warmBare     = "BenchmarkWarmCall/bare-extism"
	warmBareSame = "BenchmarkWarmCall/bare-extism-same-config"
	warmNative   = "BenchmarkWarmCall/native-go"
	stepInProc   = "BenchmarkLoopStep/in-process"
	stepProvider = "BenchmarkLoopStep/provider-subprocess"
	stepSQLite   = "BenchmarkLoopStep/sqlite"
	reactOurs    = "BenchmarkReAct/agenthost"
	reactStream  = "BenchmarkReAct/eino-stream"
	reactGen     = "BenchmarkReAct/eino-generate"
	sessionsName = "BenchmarkSessions"
	loadExamples = "BenchmarkLoadExamples"
	loadAtOnce   = "BenchmarkLoadExamplesConcurrent"
	freshBuilt   = "BenchmarkFreshInstance/built"
	freshPreinit = "BenchmarkFreshInstance/preinit"
)

// summary builds the rows from the medians of s. A missing figure shows as "–".
func summary(s samples) []row {
	ns := func(name string) float64 { return s.stat(name, "ns/op").median }
	allocs := func(name string) float64 { return s.stat(name, "allocs/op").median }
	var rows []row

	bytesOf := func(name string) float64 { return s.stat(name, "B/op").median }
	sb, bare, native := ns(warmSandbox), ns(warmBare), ns(warmNative)
	rows = append(rows,
		row{"Warm tool call: sandbox vs bare extism `Call` (Go plugin, same export)", dur(sb), dur(bare),
			paired(s, warmSandbox, warmBare), "≤ 1.5× (wall)", check(sb/bare <= 1.5, sb, bare), "1.73×"},
		row{"Warm tool call: bytes allocated, sandbox vs bare extism `Call`", fmtBytes(bytesOf(warmSandbox)), fmtBytes(bytesOf(warmBare)),
			times(bytesOf(warmSandbox), bytesOf(warmBare)), "< the bare call's", check(bytesOf(warmSandbox) < bytesOf(warmBare), sb, bare), "236 KiB"},
		row{"Warm tool call: sandbox vs native Go tool (the floor)", dur(sb), dur(native),
			paired(s, warmSandbox, warmNative), "–", "", "118×"})
	// Like for like: bare extism on the sandbox's runtime configuration (calls that stop
	// when their context ends, which the sandbox's timeouts need).
	same := ns(warmBareSame)
	rows = append(rows,
		row{"Warm tool call: sandbox vs bare extism on the same runtime configuration", dur(sb), dur(same),
			paired(s, warmSandbox, warmBareSame), "≤ 1.25× (wall)", check(sb/same <= 1.25, sb, same), "– (new)"},
		row{"Warm tool call: bytes allocated, sandbox vs bare extism on the same configuration", fmtBytes(bytesOf(warmSandbox)), fmtBytes(bytesOf(warmBareSame)),
			times(bytesOf(warmSandbox), bytesOf(warmBareSame)), "≤ bare + 16 KiB", check(bytesOf(warmSandbox) <= bytesOf(warmBareSame)+16<<10, sb, same), "– (new)"})

	for _, p := range []struct{ lang, label, before string }{{"go", "Go-built (3.5 MB)", "25.6×"}, {"c", "C-built (1 KB)", "3.17×"}} {
		first, cached := ns("BenchmarkStart/"+p.lang+"/first"), ns("BenchmarkStart/"+p.lang+"/cached")
		rows = append(rows, row{"Plugin start, " + p.label + ": with the compilation cache vs first start",
			dur(cached), dur(first), times(first, cached) + " faster", "≥ 10× faster", check(first/cached >= 10, first, cached), p.before})
	}
	load, atOnce := ns(loadExamples), ns(loadAtOnce)
	rows = append(rows, row{"Plugin start, a manifest of the 14 examples from a warm cache", dur(load), "–", "–",
		"< 100 ms", check(load < 100e6, load, 1), "– (new)"},
		row{"Plugin start, the 14 examples loaded at once (host.Open) vs one by one", dur(atOnce), dur(load),
			paired(s, loadAtOnce, loadExamples), "≤ 0.7× (wall)", check(atOnce/load <= 0.7, atOnce, load), "– (new)"})
	built, pre := ns(freshBuilt), ns(freshPreinit)
	rows = append(rows, row{"Fresh-instance call of the Go calc plugin (isolation `call`): pre-initialised vs as built",
		dur(pre), dur(built), paired(s, freshPreinit, freshBuilt), "≤ 0.55× (wall)", check(pre/built <= 0.55, pre, built), "– (new)"})

	in := ns(stepInProc)
	rows = append(rows,
		row{"Loop step, in-process model (one run: 2 model calls + 1 tool call)", dur(in) + ", " + count(allocs(stepInProc)) + " allocs",
			"–", "–", "< 20 µs (issue 2)", check(in < 20000, in, 1), "15.2 µs, 109 allocs"},
		row{"Loop step through the provider subprocess", dur(ns(stepProvider)), dur(in), paired(s, stepProvider, stepInProc),
			"≤ 250 µs", check(ns(stepProvider) <= 250e3, ns(stepProvider), 1), "441 µs"},
		row{"Loop step with the SQLite store vs no store", dur(ns(stepSQLite)), dur(in), paired(s, stepSQLite, stepInProc),
			"≤ 10× (wall)", check(ns(stepSQLite)/in <= 10, ns(stepSQLite), in), "57.0×"})

	ours, stream, gen := ns(reactOurs), ns(reactStream), ns(reactGen)
	rows = append(rows,
		row{"ReAct step, agenthost vs eino (streamed, ns/step)", dur(ours), dur(stream),
			times(stream, ours) + " less", "≥ 3× less", check(stream/ours >= 3, stream, ours), "1.71× less"},
		row{"ReAct step, agenthost vs eino (streamed, allocs/step)", count(allocs(reactOurs)), count(allocs(reactStream)),
			times(allocs(reactStream), allocs(reactOurs)) + " fewer", "≤ 50 allocs", check(allocs(reactOurs) <= 50, allocs(reactOurs), 1), "109"},
		row{"ReAct step, agenthost vs eino (eino Generate, ns/step)", dur(ours), dur(gen),
			times(gen, ours) + " less", "–", "", "1.54× less"})

	runs := s.stat(sessionsName, "runs/s").median
	rss := s.stat(sessionsName, "peak-RSS-MiB").median
	idle := s.stat(sessionsName, "B/idle-session").median
	rows = append(rows,
		row{"1,000 concurrent sessions (100 ms model delay, ideal 5,000 runs/s)", count(runs) + " runs/s", "5,000 runs/s",
			percent(runs, 5000) + " of ideal", "–", "", "4,251 runs/s"},
		row{"Peak RSS with 1,000 concurrent sessions", fmt.Sprintf("%.0f MiB", rss), "1 GiB", percent(rss, 1024) + " of it",
			"< 1 GiB", check(rss < 1024, rss, 1), "69 MiB"},
		row{"Memory per idle session (one-step run kept in a MemoryStore)", fmtBytes(idle), "–", "–", "–", "", "6.77 KiB"})
	if idleServe := s.stat("BenchmarkServeIdle", "rss-MiB/op"); idleServe.n > 0 {
		rows = append(rows, row{"Idle `serve` RSS (SQLite store, scripted provider, no plugin; the provider's process not counted)",
			fmt.Sprintf("%.1f MiB (%.1f – %.1f)", idleServe.median, idleServe.min, idleServe.max), "–", "–", "–", "", "75 MiB (issue 53)"})
	}
	rows = append(rows, procStartRow(s))

	r10, r100, shared := ns("BenchmarkMemoryRecall/10k"), ns("BenchmarkMemoryRecall/100k"), ns("BenchmarkMemoryRecall/100k-1000-users")
	rows = append(rows,
		row{"Memory recall (SQLite FTS5, top 5): 100k vs 10k memories of one user", dur(r100), dur(r10), paired(s, "BenchmarkMemoryRecall/100k", "BenchmarkMemoryRecall/10k"), "–", "", "– (new)"},
		row{"Memory recall: 100k memories over 1,000 users vs 10k of one user", dur(shared), dur(r10), times(shared, r10), "< 10k of one user's",
			check(shared < r10, shared, r10), "– (new)"})
	rows = append(rows, recallRows(s)...)
	rows = append(rows, historyRows(s)...)
	return append(rows, workflowRows(s)...)
}

// workflowRows are the workflow step rows: eight tool steps of a workflow run vs eight
// direct calls through the same pipeline, in CPU (the target's resource).
func workflowRows(s samples) []row {
	var rows []row
	for _, st := range []struct{ name, label, target, before string }{
		{"sqlite", "SQLite", "≤ 1.15× (CPU)", "1.44× (issue 53)"}, {"memory", "memory store", "–", "4× (issue 53)"},
	} {
		wf, direct := "BenchmarkWorkflowStep/"+st.name+"/workflow", "BenchmarkWorkflowStep/"+st.name+"/direct"
		c, cd := s.stat(wf, "cpu-ns/op").median/8, s.stat(direct, "cpu-ns/op").median/8
		met := ""
		if st.target != "–" {
			met = check(s.ratio(wf, direct, "cpu-ns/op").median <= 1.15, c, cd)
		}
		rows = append(rows, row{"Workflow tool step vs a direct pipeline call, " + st.label + " (CPU a step, 8 steps a run)",
			dur(c) + " CPU", dur(cd) + " CPU", paired(s, wf, direct), st.target, met, st.before})
	}
	return rows
}

// historyRows are the run start vs history rows: a one-step run on a session of 801 and
// 81 messages vs one of 9, in CPU (the target's resource), on each store. The target
// (issue 53) holds for a chat's next turn and for the first run since the process
// started alike: the second is what a restarted server's first turn pays.
func historyRows(s samples) []row {
	var rows []row
	for _, st := range []struct{ name, label, target string }{
		{"sqlite", "SQLite, a chat's next turn", "≤ 1.5× (CPU)"}, {"postgres", "PostgreSQL, a chat's next turn (this process's CPU)", "≤ 1.5× (CPU)"},
		{"memory", "memory store", "–"}, {"sqlite-cold", "SQLite, first run since the process started", "≤ 1.5× (CPU)"},
		{"postgres-cold", "PostgreSQL, first run since the process started (this process's CPU)", "≤ 1.5× (CPU)"},
	} {
		base := "BenchmarkRunHistory/" + st.name + "/messages=9"
		c9 := s.stat(base, "cpu-ns/op").median
		for _, n := range []string{"801", "81"} {
			name := "BenchmarkRunHistory/" + st.name + "/messages=" + n
			c := s.stat(name, "cpu-ns/op").median
			r := s.ratio(name, base, "cpu-ns/op")
			met := ""
			if st.target != "–" && n == "801" {
				met = check(r.median <= 1.5, c, c9)
			}
			rows = append(rows, row{"Run start vs history, " + st.label + ": " + n + " vs 9 messages (CPU a run)",
				dur(c) + " CPU, " + count(s.stat(name, "allocs/op").median) + " allocs", dur(c9) + " CPU",
				paired(s, name, base), map[bool]string{true: st.target, false: "–"}[n == "801"], met, "35× (801, issue 53)"})
		}
	}
	return rows
}

// markdown renders rows as a table.
func markdown(rows []row) string {
	var b strings.Builder
	b.WriteString("| row | agenthost | comparison | ratio | target | met | before |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.what, r.ours, r.theirs, r.ratio, r.target, r.met, r.before)
	}
	return b.String()
}

// details renders every benchmark's medians, with the range over the -count runs.
func details(s samples) string {
	var b strings.Builder
	b.WriteString("| benchmark | runs | ns/op median (min – max) | cpu-ns/op | B/op | allocs/op | other |\n|---|---|---|---|---|---|---|\n")
	for _, name := range s.names() {
		t := s.stat(name, "ns/op")
		var other []string
		for _, u := range []string{"runs/s", "peak-RSS-MiB", "B/idle-session", "rss-MiB/op"} {
			if o := s.stat(name, u); o.n > 0 {
				other = append(other, fmt.Sprintf("%s %s", count(o.median), u))
			}
		}
		fmt.Fprintf(&b, "| `%s` | %d | %s (%s – %s) | %s | %s | %s | %s |\n", name, t.n, dur(t.median), dur(t.min), dur(t.max),
			dur(s.stat(name, "cpu-ns/op").median), fmtBytes(s.stat(name, "B/op").median), count(s.stat(name, "allocs/op").median),
			strings.Join(other, ", "))
	}
	return b.String()
}

func check(ok bool, a, b float64) string {
	switch {
	case a == 0 || b == 0 || math.IsNaN(a) || math.IsNaN(b):
		return "–"
	case ok:
		return "yes"
	}
	return "**no**"
}

// dur formats nanoseconds with three significant digits.
func dur(ns float64) string {
	switch {
	case ns == 0:
		return "–"
	case ns < 1e3:
		return sig(ns) + " ns"
	case ns < 1e6:
		return sig(ns/1e3) + " µs"
	case ns < 1e9:
		return sig(ns/1e6) + " ms"
	}
	return sig(ns/1e9) + " s"
}

func sig(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// paired is a ratio cell: a/b in wall time (ns/op) and, when both report it, in CPU
// (cpu-ns/op), each the median over the rounds with its range.
func paired(s samples, a, b string) string {
	cell := func(what, unit string) string {
		r := s.ratio(a, b, unit)
		if r.n == 0 {
			return ""
		}
		return fmt.Sprintf("%s %s× (%s–%s)", what, sig(r.median), sig(r.min), sig(r.max))
	}
	out := cell("wall", "ns/op")
	if c := cell("CPU", "cpu-ns/op"); c != "" {
		out += "; " + c
	}
	if out == "" {
		return "–"
	}
	return out
}

func times(a, b float64) string {
	if a == 0 || b == 0 {
		return "–"
	}
	return sig(a/b) + "×"
}

func percent(a, b float64) string {
	if a == 0 || b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", 100*a/b)
}

// count formats a number with thousands separators.
func count(v float64) string {
	if v == 0 {
		return "–"
	}
	s := fmt.Sprintf("%.0f", v)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func fmtBytes(v float64) string {
	switch {
	case v == 0:
		return "–"
	case v < 1<<10:
		return fmt.Sprintf("%.0f B", v)
	case v < 1<<20:
		return sig(v/(1<<10)) + " KiB"
	}
	return sig(v/(1<<20)) + " MiB"
}

// procStartRow is process start: the package init of `agenthost --help` (the sum of the
// runtime's inittrace, wall clock), with its allocations, which load does not change.
func procStartRow(s samples) row {
	const name = "BenchmarkProcessStart"
	ms, allocs := s.stat(name, "init-ms/op").median, s.stat(name, "init-allocs/op").median
	return row{"Process start: package init of `agenthost --help` (wall; allocations)", fmt.Sprintf("%.1f ms; %s allocs", ms, count(allocs)),
		"–", "–", "≤ 10 ms", check(ms <= 10, ms, 1), "21–33 ms (issue 53)"}
}
