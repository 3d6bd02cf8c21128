package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testbin"
)

// Wasm built from source once per test binary (see TestMain), and the
// directories of the module zips whose test plugins we run unchanged.
var fixtures struct {
	guest, hostile []byte
	wasicmd        []byte
	csleep         []byte // C WASI command: sleep(argv[1]) (testdata/csleep)
	guestPath      string
	extismDir      string
	wazeroDir      string
	cacheDir       string
}

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sandbox-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	defer testbin.Cleanup()
	if err := buildFixtures(dir); err != nil {
		fmt.Fprintln(os.Stderr, "build test plugins:", err)
		return 1
	}
	return m.Run()
}

func buildFixtures(dir string) error {
	var err error
	if fixtures.guestPath, err = testbin.Build(testbin.Bin{Pkg: "sandbox/testdata/guest", Wasm: true, CShared: true}); err != nil {
		return err
	}
	cmdPath, err := testbin.Build(testbin.Bin{Pkg: "sandbox/testdata/wasicmd", Wasm: true})
	if err != nil {
		return err
	}
	hostile := filepath.Join(dir, "hostile.wasm")
	if out, err := exec.Command("wat2wasm", "testdata/wat/hostile.wat", "-o", hostile).CombinedOutput(); err != nil {
		return fmt.Errorf("wat2wasm (run `make deps`): %v\n%s", err, out)
	}
	csleep := filepath.Join(dir, "csleep.wasm")
	if out, err := exec.Command("clang", "--target=wasm32-wasi", "-O2", "-o", csleep, "testdata/csleep/main.c").CombinedOutput(); err != nil {
		return fmt.Errorf("clang --target=wasm32-wasi (run `make deps` for clang and wasi-libc): %v\n%s", err, out)
	}
	if fixtures.csleep, err = os.ReadFile(csleep); err != nil {
		return err
	}
	if fixtures.guest, err = os.ReadFile(fixtures.guestPath); err != nil {
		return err
	}
	if fixtures.wasicmd, err = os.ReadFile(cmdPath); err != nil {
		return err
	}
	if fixtures.hostile, err = os.ReadFile(hostile); err != nil {
		return err
	}
	if fixtures.extismDir, err = moduleDir("github.com/extism/go-sdk"); err != nil {
		return err
	}
	if fixtures.wazeroDir, err = moduleDir("github.com/tetratelabs/wazero"); err != nil {
		return err
	}
	fixtures.cacheDir = filepath.Join(dir, "cache")
	return nil
}

func moduleDir(mod string) (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", mod).Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %v", mod, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// newTestRuntime shares one compilation cache directory across the tests of
// a run, so each module is compiled once.
func newTestRuntime(t testing.TB) *Runtime {
	t.Helper()
	r, err := NewRuntime(context.Background(), RuntimeOptions{CacheDir: fixtures.cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	return r
}

func load(t testing.TB, r *Runtime, cfg Config) *Plugin {
	t.Helper()
	p, err := r.Load(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

func callTool(t testing.TB, p *Plugin, tool, args string) CallResult {
	t.Helper()
	res, err := p.InvokeTool(context.Background(), tool, []byte(args))
	if err != nil {
		t.Fatalf("InvokeTool(%s, %s): %v", tool, args, err)
	}
	return res
}

func wantResult(t testing.TB, res CallResult, isError bool, text string) {
	t.Helper()
	if res.IsError != isError || res.Text() != text {
		t.Fatalf("got result isError=%v %q\nwant isError=%v %q", res.IsError, res.Text(), isError, text)
	}
}

// extismTool declares one export of an extism plugin as a tool whose input
// is the string argument "text".
func extismTool(export string) []ToolDecl {
	return []ToolDecl{{Name: export, Export: export, Input: "text",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)}}
}

// testHost is an in-memory Host that records what plugins did.
type testHost struct {
	mu       sync.Mutex
	kv       map[string][]byte
	notified []string
}

func (h *testHost) CreateMessage(ctx context.Context, plugin string, req json.RawMessage) (json.RawMessage, error) {
	var in struct {
		Messages []struct {
			Content struct{ Text string } `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(req, &in); err != nil || len(in.Messages) == 0 {
		return nil, fmt.Errorf("bad request %s", req)
	}
	return json.Marshal(map[string]any{
		"role": "assistant", "model": "test",
		"content": map[string]string{"type": "text", "text": plugin + " asked: " + in.Messages[0].Content.Text},
	})
}

func (h *testHost) Notify(ctx context.Context, plugin, method string, params json.RawMessage) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notified = append(h.notified, plugin+" "+method+" "+string(params))
}

func (h *testHost) KVGet(ctx context.Context, plugin, key string) ([]byte, bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.kv[plugin+"/"+key]
	return v, ok, nil
}

func (h *testHost) KVSet(ctx context.Context, plugin, key string, val []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.kv == nil {
		h.kv = map[string][]byte{}
	}
	h.kv[plugin+"/"+key] = bytes.Clone(val)
	return nil
}

func (h *testHost) KVDelete(ctx context.Context, plugin, key string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.kv, plugin+"/"+key)
	return nil
}

// within fails the test when f took longer than limit plus a second: the
// bound the sandbox promises for a misbehaving plugin.
func within(t testing.TB, limit time.Duration, f func()) {
	t.Helper()
	start := time.Now()
	f()
	// The bound proves the call ended because of its limit, not that it ended fast: a
	// busy machine (make test under load, -race) stretches everything, so the slack is
	// generous; a call that ignored its limit would run far past it.
	if slack := limit + 10*time.Second; time.Since(start) > limit+slack {
		t.Fatalf("took %s, more than the %s limit + %s", time.Since(start), limit, slack)
	}
}
