package bench

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/bench/fake"
	"github.com/agenthost/agenthost/loop"
)

// BenchmarkSessions is the concurrency row: one op is 1,000 one-step runs at once, each
// in its own session, on one Agent in this process. The model is fake.Model with a
// 100 ms delay before each answer (two answers per run), so a run takes at least 200 ms
// and the ideal is 5,000 runs/s; sessions are kept in a MemoryStore, a new one per op.
//
// Reported: runs/s (wall clock), peak-RSS-MiB (VmHWM of this process, reset before the
// first op: run this benchmark in a process of its own, as benchtable does), and
// B/idle-session: the live heap that 1,000 finished sessions keep (their history in the
// MemoryStore, after a GC), divided by 1,000, measured after the timed ops.
func BenchmarkSessions(b *testing.B) {
	const sessions = 1000
	m := fake.Model{Delay: 100 * time.Millisecond}
	debug.FreeOSMemory()
	resetPeakRSS()
	runs := 0
	fake.WithCPU(b, func() {
		for b.Loop() {
			runConcurrent(b, m, loop.NewMemoryStore(), sessions)
			runs += sessions
		}
	})
	b.ReportMetric(float64(runs)/b.Elapsed().Seconds(), "runs/s")
	b.ReportMetric(float64(peakRSS(b))/(1<<20), "peak-RSS-MiB")

	live0 := liveHeap()
	st := loop.NewMemoryStore()
	runConcurrent(b, m, st, sessions)
	live1 := liveHeap()
	runtime.KeepAlive(st)
	// Signed: another GC cycle may free more of what came before than the sessions keep,
	// and an unsigned difference would then read as 18 EB a session.
	b.ReportMetric(float64(int64(live1)-int64(live0))/sessions, "B/idle-session")
}

// runConcurrent runs n one-step runs at once on one agent and waits for them all.
func runConcurrent(b *testing.B, m loop.Model, st loop.SessionStore, n int) {
	a, err := fake.Agent(m, st)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			res, err := a.Run(ctx, loop.RunInput{Messages: []loop.Message{loop.UserMessage("2+3?")}})
			if err == nil && (res.Final == nil || res.Final.Text() != fake.Answer) {
				err = &runError{res}
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

type runError struct{ res loop.RunResult }

func (e *runError) Error() string { return "unexpected run result: " + string(e.res.Status) }

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	// Twice: what the first collection's finalizers release is freed by the second.
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// resetPeakRSS restarts VmHWM from the current RSS (Linux: "5" to clear_refs).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS is VmHWM from /proc/self/status, in bytes.
func peakRSS(b *testing.B) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmHWM in /proc/self/status")
	return 0
}
