package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// One adapter crash is one failure (issue 29): with thirty runs streaming, a SIGKILL
// counted thirty and opened the breaker, and every run waited out the cool-down.

func TestAdapterKilledUnderConcurrentStreamsCountsOnceAndTheRunsCompleteOnTheRestart(t *testing.T) {
	const runs = 10
	text := strings.Repeat("x", 40) // 40 chunks 100 ms apart: every run is mid-stream at the kill
	dir := t.TempDir()
	fixture := fmt.Sprintf(`{"per_session": true, "repeat": true, "turns": [{"text": %q, "chunk": 1, "chunk_delay_ms": 100}]}`, text)
	if err := os.WriteFile(filepath.Join(dir, "script.json"), []byte(fixture), 0o644); err != nil {
		t.Fatal(err)
	}
	// Three failures open the breaker for ten minutes: counted once per call, the kill
	// opens it and the runs cannot finish within the test's bound.
	manifest := fmt.Sprintf(`[agent]
provider = "scripted"
model = "m1"
[providers.scripted]
command = %q
options = { script = "script.json" }
breaker_failures = 3
breaker_cooldown = "10m"
[store]
kind = "memory"
`, scriptedBin)
	if err := os.WriteFile(filepath.Join(dir, "agent.toml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := Open(context.Background(), Options{Manifest: filepath.Join(dir, "agent.toml"), CacheDir: wasmCache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	pid := h.providers[0].PID()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var (
		mu        sync.Mutex
		opened    []string
		retried   = map[int]bool{}
		streaming sync.WaitGroup
		wg        sync.WaitGroup
		results   = make([]loop.RunResult, runs)
		errs      = make([]error, runs)
	)
	streaming.Add(runs)
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := sync.OnceFunc(streaming.Done)
			results[i], errs[i] = h.Agent.RunWith(ctx, loop.RunInput{SessionID: fmt.Sprintf("s%d", i),
				Messages: []loop.Message{loop.UserMessage("go")}}, func(e loop.Event) {
				switch d := e.Data.(type) {
				case *loop.ModelDeltaData:
					first()
				case *loop.CircuitData:
					mu.Lock()
					opened = append(opened, d.State+": "+d.Reason)
					mu.Unlock()
					if d.State == "open" {
						cancel() // it would hold every run for ten minutes: fail now
					}
				case *loop.ErrorData:
					mu.Lock()
					retried[i] = retried[i] || d.Retryable
					mu.Unlock()
				}
			})
			first() // a run that failed before streaming must not hang the test
		}()
	}
	streaming.Wait()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	if len(opened) > 0 {
		t.Fatalf("the breaker changed state: %q", opened)
	}
	for i := range runs {
		if errs[i] != nil || results[i].Status != loop.StatusCompleted || results[i].Final.Text() != text {
			t.Fatalf("run %d: %v %s %q", i, errs[i], results[i].Status, results[i].Final.Text())
		}
	}
	if len(retried) != runs {
		t.Fatalf("%d of %d runs saw the crash and retried: the kill did not hit every stream", len(retried), runs)
	}
	if now := h.providers[0].PID(); now == pid || now == 0 {
		t.Fatalf("adapter pid %d after the kill of %d: not restarted", now, pid)
	}
}

func TestBreakerCountsTheCallsOfOneFailedProcessOnce(t *testing.T) {
	b := newBreaker("p", 2, time.Minute)
	ctx := context.Background()
	crash := func(proc uint64) error {
		return &processFailure{ModelError: &loop.ModelError{Kind: loop.KindProvider, Message: "adapter exited", Retryable: true}, process: proc}
	}
	for range 30 {
		b.failure(ctx, crash(7))
	}
	if b.state != "closed" || b.failures != 1 {
		t.Fatalf("30 calls of one crash: state %s, %d failures", b.state, b.failures)
	}
	b.failure(ctx, crash(8)) // the restarted process crashed too: a second failure
	if b.state != "open" {
		t.Fatalf("two crashes: state %s", b.state)
	}
	b.now = func() time.Time { return time.Now().Add(time.Hour) }
	if !b.allow(ctx) {
		t.Fatal("no probe after the cool-down")
	}
	b.failure(ctx, crash(8)) // a probe's failure counts even for a counted process
	if b.state != "open" || b.probing {
		t.Fatalf("failed probe: state %s, probing %v", b.state, b.probing)
	}
	if !errors.As(crash(1), new(*loop.ModelError)) {
		t.Fatal("the loop does not see a process failure as a model error")
	}
}
