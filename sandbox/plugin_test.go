package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestConcurrentCallsOnOnePlugin(t *testing.T) {
	r := newTestRuntime(t)
	p := loadGuest(t, r, Permissions{}, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := p.InvokeTool(context.Background(), "greet", []byte(fmt.Sprintf(`{"text":"caller %d"}`, i)))
			if want := fmt.Sprintf("Hello, caller %d!", i); err != nil || res.IsError || res.Text() != want {
				errs <- fmt.Errorf("call %d: %+v %v, want %q", i, res, err, want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n, size := len(p.pool.idle), cap(p.pool.slots); n < 1 || n > size {
		t.Fatalf("%d idle instances, want between 1 and the pool size %d", n, size)
	}
}

func TestOversizedInputFailsBeforeTheCall(t *testing.T) {
	r := newTestRuntime(t)
	p := loadGuest(t, r, Permissions{MaxInput: 1 << 20}, nil)
	big := strings.Repeat("a", 3<<20)
	wantResult(t, callTool(t, p, "greet", fmt.Sprintf(`{"text":%q}`, big)), true,
		`plugin "guest": greet: input 3 MiB exceeds max_input 1 MiB`)
	_, err := p.CallExport(context.Background(), "greet", []byte(big))
	var fault *Fault
	if !errors.As(err, &fault) || fault.Kind != FaultInput {
		t.Fatalf("CallExport: %v, want an input fault", err)
	}
	if len(p.pool.idle) != 0 {
		t.Fatal("an instance was created for a call that should not have started")
	}
}

func TestCallExportForHooks(t *testing.T) {
	r := newTestRuntime(t)
	p := loadGuest(t, r, Permissions{}, nil)
	out, err := p.CallExport(context.Background(), "greet", []byte(`{"step":1}`))
	if err != nil || string(out) != `Hello, {"step":1}!` {
		t.Fatalf("CallExport: %q %v", out, err)
	}
	if _, err := p.CallExport(context.Background(), "on_step", nil); err == nil || err.Error() != `plugin "guest" has no export "on_step"` {
		t.Fatalf("missing export: %v", err)
	}
	_, err = p.CallExport(context.Background(), "exit", nil)
	var fault *Fault
	if !errors.As(err, &fault) || fault.Kind != FaultExit || err.Error() != `plugin "guest": exit: exited with code 7` {
		t.Fatalf("exit: %v", err)
	}
}

func TestKVAndModelArePermissions(t *testing.T) {
	r := newTestRuntime(t)
	host := &testHost{}
	granted := loadGuest(t, r, Permissions{KV: true, Model: true}, host)
	wantResult(t, callTool(t, granted, "kv", `{"text":"v1"}`), false, `before="" after="v1" gone=true`)
	wantResult(t, callTool(t, granted, "ask", `{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":10}`),
		false, `{"content":{"text":"guest asked: hi","type":"text"},"model":"test","role":"assistant"}`)
	if len(host.notified) != 1 || host.notified[0] != `guest notifications/progress {"progressToken":"t","progress":1}` {
		t.Fatalf("notifications %q", host.notified)
	}

	denied := loadGuest(t, r, Permissions{}, host)
	wantResult(t, callTool(t, denied, "kv", `{"text":"v1"}`), true, `plugin "guest": kv: kv_get: plugin "guest" has no kv permission`)
	wantResult(t, callTool(t, denied, "ask", `{"messages":[]}`), true, `plugin "guest": ask: create_message: plugin "guest" has no model permission`)
	wantResult(t, callTool(t, denied, "greet", `{"text":"after"}`), false, "Hello, after!")

	noHost := loadGuest(t, r, Permissions{KV: true}, nil)
	wantResult(t, callTool(t, noHost, "kv", `{"text":"v1"}`), true, `plugin "guest": kv: kv_get "k": no host is attached to this sandbox`)
}

func TestConfigIsPassed(t *testing.T) {
	r := newTestRuntime(t)
	p := loadGuest(t, r, Permissions{Config: map[string]string{"greeting": "hi"}}, nil)
	wantResult(t, callTool(t, p, "config", `{"key":"greeting"}`), false, "hi")
	wantResult(t, callTool(t, p, "config", `{"key":"other"}`), true, `plugin "guest": config: no config other`)
}

func TestLoadErrors(t *testing.T) {
	r := newTestRuntime(t)
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Name: "x", Wasm: []byte("nope")}, `load plugin "x": not a WebAssembly binary module`},
		{Config{Name: "x", Wasm: fixtures.guest, Tools: []ToolDecl{{Name: "t", Export: "missing"}}}, `load plugin "x": tool "t": the module has no export "missing"`},
		{Config{Name: "x", Wasm: fixtures.guest, ABI: ABIMCP}, `load plugin "x": abi mcp needs the exports call+describe (v1) or list_tools+call_tool (v2)`},
		{Config{Name: "x", Wasm: fixtures.guest, ABI: "grpc"}, `load plugin "x": unknown abi "grpc" (want mcp, extism or wasi)`},
		{Config{Name: "x", Wasm: fixtures.guest, Permissions: Permissions{Memory: 1 << 20}}, `load plugin "x": memory limit 1 MiB exceeded: the module starts with`},
		{Config{Name: "x", Wasm: fixtures.guest, Permissions: Permissions{AllowedHosts: []string{"[a"}}}, `load plugin "x": allowed_hosts "[a"`},
	}
	for _, c := range cases {
		_, err := r.Load(context.Background(), c.cfg)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("Load: %v\nwant prefix %q", err, c.want)
		}
	}
}

func TestCompilationCacheSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	for restart := range 2 {
		r, err := NewRuntime(context.Background(), RuntimeOptions{CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		p, err := r.Load(context.Background(), Config{Name: "guest", Wasm: fixtures.guest, Tools: extismTool("greet")})
		if err != nil {
			t.Fatal(err)
		}
		wantResult(t, callTool(t, p, "greet", `{"text":"cache"}`), false, "Hello, cache!")
		p.Close(context.Background())
		r.Close(context.Background())
		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) == 0 {
			t.Fatalf("restart %d: cache dir is empty (%v)", restart, err)
		}
	}
}

// The Runtime's own records in CacheDir are named by the wazero version wazero names its
// directory by, in every build: go test's binaries list no modules, and `make test` sets
// both names (wazeroVersionUnlisted), so that they share the cache with the agenthost
// processes they start. Set for one and not the other, the two would miss each other's
// entries.
func TestCacheRecordsAreNamedByWazerosOwnVersion(t *testing.T) {
	dir := t.TempDir()
	r, err := NewRuntime(context.Background(), RuntimeOptions{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Load(context.Background(), Config{Name: "guest", Wasm: fixtures.guest, Tools: extismTool("greet")})
	if err != nil {
		t.Fatal(err)
	}
	p.Close(context.Background())
	r.Close(context.Background())
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	suffix := wazeroVersion() + "-" + goruntime.GOARCH + "-" + goruntime.GOOS
	if want := []string{"agenthost-compiled-" + suffix, "wazero-" + suffix}; !slices.Equal(names, want) {
		t.Fatalf("cache directory holds %v, want %v", names, want)
	}
}

func TestClosedPlugin(t *testing.T) {
	r := newTestRuntime(t)
	p, err := r.Load(context.Background(), Config{Name: "guest", Wasm: fixtures.guest, Tools: extismTool("greet")})
	if err != nil {
		t.Fatal(err)
	}
	p.Close(context.Background())
	if _, err := p.InvokeTool(context.Background(), "greet", []byte(`{"text":"x"}`)); !errors.Is(err, errClosed) {
		t.Fatalf("call after close: %v", err)
	}
}

func TestHostGlobs(t *testing.T) {
	policy, err := newHostPolicy([]string{"*.example.com", "127.0.0.1:8080", "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	for hostPort, want := range map[string]bool{
		"api.example.com:443":  true,
		"example.com:443":      false,
		"a.b.example.com:443":  false,
		"127.0.0.1:8080":       true,
		"127.0.0.1:8081":       false,
		"localhost:1234":       true,
		"LOCALHOST:1":          true,
		"evil.com:443":         false,
		"[::1]:8080":           false,
		"example.com.evil:443": false,
	} {
		if got := policy.allows(hostPort); got != want {
			t.Errorf("allows(%s) = %v, want %v", hostPort, got, want)
		}
	}
}
