package sandbox

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// LoadAll loads every config (the plugins in order); when some fail, the error is the
// first failing one's in order even when a later one failed first, and what did load
// is closed.
func TestLoadAll_OrderAndTheFirstErrorInOrderWhicheverFailsFirst(t *testing.T) {
	r := newTestRuntime(t)
	good := func(name string) Config {
		return Config{Name: name, Wasm: fixtures.guest, Tools: tools(map[string]string{"counter": ""})}
	}
	ps, _, err := r.LoadAll(context.Background(), []Config{good("a"), good("b"), good("c")})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"a", "b", "c"} {
		if ps[i].Name() != want {
			t.Fatalf("plugin %d is %s, want %s", i, ps[i].Name(), want)
		}
		ps[i].Close(context.Background())
	}

	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4)) // four slots: index 1 can wait for 3
	var mu sync.Mutex
	var loaded []*Plugin
	later := make(chan struct{})
	ps, at, err := LoadEach(context.Background(), 4, func(ctx context.Context, i int) (*Plugin, error) {
		switch i {
		case 1:
			<-later // fails after 3 did
			return nil, errors.New("one failed")
		case 3:
			defer close(later)
			return nil, errors.New("three failed")
		}
		p, err := r.Load(ctx, good(string(rune('a'+i))))
		mu.Lock()
		loaded = append(loaded, p)
		mu.Unlock()
		return p, err
	})
	if ps != nil || at != 1 || err == nil || !strings.Contains(err.Error(), "one failed") {
		t.Fatalf("LoadEach = %v, %d, %v; want the error of index 1", ps, at, err)
	}
	for _, p := range loaded {
		if p != nil && !p.closed.Load() {
			t.Fatalf("plugin %s was left open", p.Name())
		}
	}
}
