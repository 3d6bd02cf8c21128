package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/store/pgtest"
	"github.com/agenthost/agenthost/surface/cluster"
)

// The load test: BenchmarkServeConcurrentRuns serves a real host (scripted provider
// process, calc Wasm plugin, SQLite store) and starts 1,000 runs at once over loopback
// HTTP. Each run is two model calls with benchTurnDelay before each (time to first
// token) and one Wasm tool call. Every stream is checked: the exact event sequence
// (nothing lost) and ids that all name the stream's own run (nothing misdelivered).
// Reported: runs/s, p50/p99 latency overhead (a run's wall time minus the 2 scripted
// delays) and the peak RSS of the test process (server and clients) and of the provider.
//
//	go test -run '^$' -bench ServeConcurrentRuns -benchtime 1x ./surface/server/
//
// It is a benchmark so that plain `go test` (and `make test`) never runs it.

const (
	benchRuns      = 1000
	benchTurnDelay = 100 * time.Millisecond
)

var benchFixture = fmt.Sprintf(`{"per_session": true, "repeat": true, "turns": [
  {"delay_ms": %d, "text": "Computing.", "tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"17*23+19*29\"}"}]},
  {"delay_ms": %d, "expect": {"last_role": "tool"}, "text": "The answer is {{result c1}}."}
]}`, benchTurnDelay.Milliseconds(), benchTurnDelay.Milliseconds())

var benchWant = strings.Join([]string{
	"RUN_STARTED",
	"TEXT_MESSAGE_START", `TEXT_MESSAGE_CONTENT "Computing."`, "TEXT_MESSAGE_END",
	"TOOL_CALL_START c1 calc", `TOOL_CALL_ARGS "{\"expression\":\"17*23+19*29\"}"`, "TOOL_CALL_END",
	"CUSTOM agenthost.usage",
	"STEP_STARTED tool:c1", `TOOL_CALL_RESULT c1 "942"`, "STEP_FINISHED tool:c1",
	"TEXT_MESSAGE_START", `TEXT_MESSAGE_CONTENT "The answer is 942."`, "TEXT_MESSAGE_END",
	"CUSTOM agenthost.usage",
	"RUN_FINISHED success completed/end_turn",
}, "\n")

func BenchmarkServeConcurrentRuns(b *testing.B) {
	b.Run("store=sqlite", func(b *testing.B) {
		_, ts := serveHost(b, writeManifest(b, b.TempDir(), benchFixture, "", false), "bench-token")
		benchServe(b, []string{ts.URL})
	})
	// The same with the calc plugin served as built (preinit = false): each session's
	// fresh instance runs the Go runtime's start instead of starting from the snapshot
	// every plugin gets by default.
	b.Run("store=sqlite,preinit=false", func(b *testing.B) {
		manifest := writeManifest(b, b.TempDir(), benchFixture, "", false)
		raw, _ := os.ReadFile(manifest)
		edited := strings.Replace(string(raw), "name = \"calc\"\n", "name = \"calc\"\npreinit = false\n", 1)
		if edited == string(raw) {
			b.Fatal("no calc plugin in the manifest")
		}
		os.WriteFile(manifest, []byte(edited), 0o644)
		_, ts := serveHost(b, manifest, "bench-token")
		benchServe(b, []string{ts.URL})
	})
	b.Run("store=memory", func(b *testing.B) {
		_, ts := serveHost(b, writeManifest(b, b.TempDir(), benchFixture, "", true), "bench-token")
		benchServe(b, []string{ts.URL})
	})
	// Two nodes on one PostgreSQL: runs are River jobs, sent to the nodes in turn,
	// executed by either, each streamed by the node it was sent to (surface/cluster).
	b.Run("store=postgres,nodes=2", func(b *testing.B) {
		manifest := writeManifest(b, b.TempDir(), benchFixture, "", true)
		url := pgtest.Start(b).NewDatabase(b) + "&pool_max_conns=16"
		raw, _ := os.ReadFile(manifest)
		os.WriteFile(manifest, []byte(strings.Replace(string(raw), `kind = "memory"`, fmt.Sprintf("kind = \"postgres\"\nurl = %q", url), 1)), 0o644)
		benchServe(b, []string{clusterNode(b, manifest, url), clusterNode(b, manifest, url)})
	})
}

// clusterNode serves the manifest as `serve --workers 500` does and returns its URL.
func clusterNode(b *testing.B, manifest, url string) string {
	h, err := host.Open(context.Background(), host.Options{Manifest: manifest, Approver: InterruptApprover{}})
	if err != nil {
		b.Fatal(err)
	}
	cl, err := cluster.New(context.Background(), cluster.Options{URL: url, Runner: h.Runner(), Store: h.Store, Workers: 500})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := New(Options{Agent: h.Runner(), Store: h.Store, Token: "bench-token", Dispatch: cl})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Drain(ctx)
		ts.Close()
		_ = cl.Close(ctx)
		_ = h.Close()
	})
	return ts.URL
}

func benchServe(b *testing.B, nodes []string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchRuns, MaxConnsPerHost: 0}}

	var latencies, firsts []time.Duration
	var total time.Duration
	cpu0 := processCPU()
	for i := range b.N {
		start := time.Now()
		lat := make([]time.Duration, benchRuns)
		first := make([]time.Duration, benchRuns)
		errs := make(chan error, benchRuns)
		var wg sync.WaitGroup
		for r := range benchRuns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d, f, err := benchRun(client, nodes[r%len(nodes)], fmt.Sprintf("b%d-s%d", i, r), fmt.Sprintf("b%d-r%d", i, r))
				lat[r], first[r] = d, f
				if err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		total += time.Since(start)
		close(errs)
		n := 0
		for err := range errs {
			if n++; n <= 3 {
				b.Error(err)
			}
		}
		if n > 0 {
			b.Fatalf("%d of %d runs failed", n, benchRuns)
		}
		latencies = append(latencies, lat...)
		firsts = append(firsts, first...)
	}
	slices.Sort(latencies)
	slices.Sort(firsts)
	overhead := func(q float64) float64 {
		d := latencies[int(q*float64(len(latencies)-1))] - 2*benchTurnDelay
		return float64(d.Microseconds()) / 1000
	}
	b.ReportMetric(float64(benchRuns*b.N)/total.Seconds(), "runs/s")
	// CPU time of this process (server and clients, not the provider) per run: unlike
	// runs/s it does not drop when other processes compete for the cores.
	b.ReportMetric(float64(processCPU()-cpu0)/1e6/float64(benchRuns*b.N), "cpu-ms/run")
	b.ReportMetric(overhead(0.50), "p50-overhead-ms")
	b.ReportMetric(overhead(0.99), "p99-overhead-ms")
	b.ReportMetric(float64(firsts[int(0.99*float64(len(firsts)-1))].Microseconds())/1000, "p99-first-event-ms")
	b.ReportMetric(float64(peakRSS("self"))/1024, "peak-RSS-MB")
	if pid := providerPID(); pid != "" {
		b.ReportMetric(float64(peakRSS(pid))/1024, "provider-peak-RSS-MB")
	}
}

// benchRun runs one scripted run and checks its stream; it returns the run's wall time
// and the time to its first event.
func benchRun(client *http.Client, base, thread, run string) (time.Duration, time.Duration, error) {
	start := time.Now()
	var first time.Duration
	req, _ := http.NewRequest("POST", base+"/v1/runs", strings.NewReader(runBody(thread, run, "compute")))
	req.Header.Set("Authorization", "Bearer bench-token")
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", run, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, 0, fmt.Errorf("%s: status %d", run, resp.StatusCode)
	}
	var evs []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		if first == 0 {
			first = time.Since(start)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			return 0, 0, fmt.Errorf("%s: bad event %s", run, data)
		}
		evs = append(evs, m)
	}
	d := time.Since(start)
	if err := sc.Err(); err != nil {
		return d, first, fmt.Errorf("%s: %w", run, err)
	}
	if got := strings.Join(brief(evs), "\n"); got != benchWant {
		return d, first, fmt.Errorf("%s: events:\n%s", run, got)
	}
	for _, ev := range evs {
		for _, k := range []string{"threadId", "runId", "messageId", "parentMessageId"} {
			v, ok := ev[k].(string)
			if !ok {
				continue
			}
			if (k == "threadId" && v != thread) || (k == "runId" && v != run) ||
				(strings.HasSuffix(k, "essageId") && !strings.HasPrefix(v, run+":")) {
				return d, first, fmt.Errorf("%s: event %v belongs to another stream", run, ev)
			}
		}
	}
	return d, first, nil
}

// peakRSS reads VmHWM (kB) of /proc/PID/status.
func peakRSS(pid string) int64 {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// providerPID finds the scripted provider child of this process.
func providerPID() string {
	self := strconv.Itoa(os.Getpid())
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || !strings.Contains(s[:i], "agenthost-provi") {
			continue
		}
		if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == self {
			return e.Name()
		}
	}
	return ""
}

// processCPU is the CPU time this process has used, in nanoseconds.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
