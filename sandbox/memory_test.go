package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Recycled memory (memory.go): an instance's linear memory may serve a later
// instance, of another session or call, only after it is cleared.

// stainThenPeek has one instance fill its memory with a pattern and a later
// one look for any non-zero byte in its own; it returns what the later saw.
func stainThenPeek(t *testing.T, p *Plugin, stainCtx, peekCtx context.Context) string {
	t.Helper()
	if _, err := p.CallExport(stainCtx, "stain", nil); err != nil {
		t.Fatal(err)
	}
	out, err := p.CallExport(peekCtx, "peek", nil)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestMemoryOfADisposedInstanceIsZeroWhenReused(t *testing.T) {
	for _, tc := range []struct {
		isolation string
		pool      int
		stain     context.Context
		peek      context.Context
	}{
		// every call a fresh instance, disposed of after it
		{IsolationCall, 2, context.Background(), context.Background()},
		// one slot: session B's instance makes room by closing A's
		{IsolationSession, 1, WithSession(context.Background(), "A"), WithSession(context.Background(), "B")},
	} {
		t.Run(tc.isolation, func(t *testing.T) {
			p := load(t, newTestRuntime(t), Config{Name: "hostile", Wasm: fixtures.hostile, PoolSize: tc.pool,
				Permissions: Permissions{Isolation: tc.isolation}})
			for i := range 3 {
				if got := stainThenPeek(t, p, tc.stain, tc.peek); got != "0" {
					t.Fatalf("round %d: the new instance saw the old one's bytes (peek = %q)", i, got)
				}
			}
			if p.memories.reused.Load() == 0 {
				t.Fatal("no memory was recycled, so the test proved nothing")
			}
		})
	}
}

// An instance stopped by its deadline mid-call (wazero closes the module
// while the guest runs) gives its memory back only once the call returned,
// and the next instance still finds it cleared.
func TestMemoryOfAnInstanceStoppedByItsDeadlineIsZeroWhenReused(t *testing.T) {
	p := load(t, newTestRuntime(t), Config{Name: "hostile", Wasm: fixtures.hostile, PoolSize: 1,
		Permissions: Permissions{Isolation: IsolationCall, Timeout: 2 * time.Second}}) // peek, a fresh instance, must fit too
	for i := range 2 {
		_, err := p.CallExport(context.Background(), "stain_and_hang", nil)
		var f *Fault
		if !errors.As(err, &f) || f.Kind != FaultTimeout {
			t.Fatalf("round %d: stain_and_hang: %v, want a timeout fault", i, err)
		}
		out, err := p.CallExport(context.Background(), "peek", nil)
		if err != nil || string(out) != "0" {
			t.Fatalf("round %d: peek after a timed-out instance: %q %v", i, out, err)
		}
	}
	if p.memories.reused.Load() == 0 {
		t.Fatal("no memory was recycled")
	}
}

// A WASI command is a fresh instance every call: a Go program that takes new
// memory assumes it is zero and does not clear it.
func TestMemoryOfAWASICommandIsZeroWhenReused(t *testing.T) {
	p := load(t, newTestRuntime(t), Config{Name: "cmd", Wasm: fixtures.wasicmd, ABI: ABIWASI, PoolSize: 1})
	call := func(text string) string {
		res, err := p.InvokeTool(context.Background(), "cmd", []byte(fmt.Sprintf(`{"text":%q}`, text)))
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %v", text, res, err)
		}
		return res.Text()
	}
	for i := range 3 {
		call("stain")
		if got := call("peek"); got != "0" {
			t.Fatalf("round %d: %s non-zero bytes in new memory", i, got)
		}
	}
	if p.memories.reused.Load() == 0 {
		t.Fatal("no memory was recycled")
	}
}

func TestMemoryIsNeverSharedByInstancesAtOnce(t *testing.T) {
	p := load(t, newTestRuntime(t), Config{Name: "hostile", Wasm: fixtures.hostile, PoolSize: 4,
		Permissions: Permissions{Isolation: IsolationCall}})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				export := "stain"
				if (g+i)%2 == 0 {
					export = "peek"
				}
				out, err := p.CallExport(context.Background(), export, nil)
				if err != nil || (export == "peek" && string(out) != "0") {
					errs <- fmt.Errorf("goroutine %d call %d %s: %q %v", g, i, export, out, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if p.memories.reused.Load() == 0 {
		t.Fatal("no memory was recycled")
	}
}

func TestMemoryPoolKeepsAtMostItsBoundAndNothingAfterDrain(t *testing.T) {
	mp := newMemoryPool(2)
	for range 3 {
		mp.put(make([]byte, 10, 16))
	}
	if len(mp.free) != 2 || mp.dropped.Load() != 1 {
		t.Fatalf("kept %d, dropped %d; want 2 and 1", len(mp.free), mp.dropped.Load())
	}
	if b := mp.get(17); b != nil {
		t.Fatalf("got a buffer of capacity %d for 17 bytes", cap(b))
	}
	b := mp.get(12)
	if len(b) != 12 || cap(b) != 16 {
		t.Fatalf("len %d cap %d, want 12 and 16", len(b), cap(b))
	}
	mp.drain()
	mp.put(b)
	if mp.get(1) != nil {
		t.Fatal("a drained pool handed out a buffer")
	}
}
