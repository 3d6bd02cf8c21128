package sandbox

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// Isolation (hole 11 of the security review): a global set by a call is seen
// by a later call only if the plugin's isolation lets them share an instance.

func loadCounter(t testing.TB, isolation string, poolSize int) *Plugin {
	t.Helper()
	return load(t, newTestRuntime(t), Config{Name: "guest", Wasm: fixtures.guest, PoolSize: poolSize,
		Permissions: Permissions{Isolation: isolation}, Tools: tools(map[string]string{"counter": ""})})
}

// counts calls counter once for each session in order ("" is no session)
// and returns the answers, space-separated.
func counts(t *testing.T, p *Plugin, sessions ...string) string {
	t.Helper()
	var out []string
	for _, s := range sessions {
		ctx := context.Background()
		if s != "" {
			ctx = WithSession(ctx, s)
		}
		res, err := p.InvokeTool(ctx, "counter", nil)
		if err != nil || res.IsError {
			t.Fatalf("counter for %q: %v %v", s, res, err)
		}
		out = append(out, res.Text())
	}
	return strings.Join(out, " ")
}

func TestIsolationPooledSharesAcrossSessions(t *testing.T) {
	p := loadCounter(t, IsolationPooled, 1)
	if got := counts(t, p, "A", "B", "", "A"); got != "1 2 3 4" {
		t.Fatalf("got %q, want one instance for every call", got)
	}
}

func TestIsolationSessionKeepsSessionsApart(t *testing.T) {
	p := loadCounter(t, "", 2) // the default
	// A and B each keep their instance; C needs room and closes the least
	// recently used idle one (A's), so A starts over; then B's is the oldest.
	got := counts(t, p, "A", "B", "A", "B", "C", "C", "A", "B")
	if got != "1 1 2 2 1 2 1 1" {
		t.Fatalf("got %q", got)
	}
	// Calls without a session share one instance among themselves, not with
	// A, whose instance (idle: A's, B's) made room for it.
	if got := counts(t, p, "", "", "A"); got != "1 2 1" {
		t.Fatalf("got %q", got)
	}
}

func TestIsolationSessionExpiresIdleInstances(t *testing.T) {
	p := loadCounter(t, IsolationSession, 2)
	if got := counts(t, p, "A", "A"); got != "1 2" {
		t.Fatalf("got %q", got)
	}
	p.pool.mu.Lock()
	p.pool.idleTTL = -1 // every idle instance is past its time
	p.pool.mu.Unlock()
	if got := counts(t, p, "A"); got != "1" {
		t.Fatalf("got %q, want a fresh instance after the idle time", got)
	}
	p.pool.mu.Lock()
	defer p.pool.mu.Unlock()
	if len(p.pool.idle) != 1 {
		t.Fatalf("%d idle instances, want only the new one", len(p.pool.idle))
	}
}

func TestIsolationCallIsFreshEveryCall(t *testing.T) {
	p := loadCounter(t, IsolationCall, 2)
	if got := counts(t, p, "A", "A", "", ""); got != "1 1 1 1" {
		t.Fatalf("got %q", got)
	}
	if n := len(p.pool.idle); n != 0 {
		t.Fatalf("%d idle instances kept", n)
	}
}

// TestIsolationSessionBoundsInstances runs many sessions at once: never
// more instances than the pool size, and each call sees only its session.
func TestIsolationSessionBoundsInstances(t *testing.T) {
	p := loadCounter(t, IsolationSession, 3)
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := WithSession(context.Background(), fmt.Sprint("s", i))
			for range 5 {
				res, err := p.InvokeTool(ctx, "counter", nil)
				if err != nil || res.IsError {
					t.Errorf("session %d: %v %v", i, res, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	p.pool.mu.Lock()
	defer p.pool.mu.Unlock()
	if n := len(p.pool.idle); n > 3 || p.pool.busy != 0 {
		t.Fatalf("%d idle and %d busy instances, want at most 3 and 0", n, p.pool.busy)
	}
	for _, in := range p.pool.idle {
		if !strings.HasPrefix(in.key, "s") {
			t.Fatalf("idle instance keyed %q", in.key)
		}
	}
}

func TestIsolationUnknownRefused(t *testing.T) {
	_, err := newTestRuntime(t).Load(context.Background(), Config{Name: "guest", Wasm: fixtures.guest,
		Permissions: Permissions{Isolation: "shared"}, Tools: tools(map[string]string{"counter": ""})})
	if err == nil || err.Error() != `load plugin "guest": isolation "shared": want pooled, session or call` {
		t.Fatalf("got %v", err)
	}
}

// Deleting a session forgets it in its plugins (issue 46): its idle instance is closed,
// so its next call starts over, another session's instance is kept, and the memory the
// instance used is cleared as it goes back for reuse, not when it is next handed out.
func TestForgetSessionClosesItsInstanceAndClearsItsMemory(t *testing.T) {
	p := loadCounter(t, IsolationSession, 2)
	if got := counts(t, p, "A", "A", "B"); got != "1 2 1" {
		t.Fatalf("got %q", got)
	}
	if n := p.ForgetSession(context.Background(), "A"); n != 1 {
		t.Fatalf("forgot %d instances, want A's one", n)
	}
	p.memories.mu.Lock()
	for i, b := range p.memories.free {
		for j, c := range b[:cap(b)] {
			if c != 0 {
				p.memories.mu.Unlock()
				t.Fatalf("recycled memory %d holds byte %#x at %d after ForgetSession", i, c, j)
			}
		}
	}
	kept := len(p.memories.free)
	p.memories.mu.Unlock()
	if kept == 0 {
		t.Fatal("no memory was recycled: the check above proves nothing")
	}
	if got := counts(t, p, "A", "B"); got != "1 2" {
		t.Fatalf("got %q, want A fresh and B's instance kept", got)
	}
	if n := p.ForgetSession(context.Background(), "nobody"); n != 0 {
		t.Fatalf("forgot %d instances of a session without any", n)
	}
	pooled := loadCounter(t, IsolationPooled, 1)
	counts(t, pooled, "A")
	if n := pooled.ForgetSession(context.Background(), "A"); n != 0 {
		t.Fatalf("a pooled instance is every session's: forgot %d", n)
	}
}
