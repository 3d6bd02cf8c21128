package plugins

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/sandbox"
)

// examplePath builds (through scripts/plugins.d/examples.sh, which does
// nothing when the output is newer than its sources) and returns the .wasm of
// an example, e.g. "go/calc" → examples/go/calc/calc.wasm. A build failure
// fails the test with the script's output; nothing is skipped.
func examplePath(t testing.TB, example string) string {
	t.Helper()
	name := filepath.Base(example)
	path := filepath.Join("examples", example, name+".wasm")
	buildOnce.Lock()
	defer buildOnce.Unlock()
	if !built[example] {
		cmd := exec.Command("bash", "scripts/plugins.d/examples.sh", name)
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build example %s: %v\n%s", example, err, out)
		}
		built[example] = true
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("example %s: %v (scripts/plugins.d/examples.sh did not build it)", example, err)
	}
	return path
}

var (
	buildOnce sync.Mutex
	built     = map[string]bool{}
)

// loadExample loads an example with the given config (Name and Path filled in).
func loadExample(t testing.TB, example string, cfg sandbox.Config) *sandbox.Plugin {
	t.Helper()
	ctx := context.Background()
	r, err := sandbox.NewRuntime(ctx, sandbox.RuntimeOptions{CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(ctx) })
	if cfg.Name == "" {
		cfg.Name = filepath.Base(example)
	}
	cfg.Path = examplePath(t, example)
	p, err := r.Load(ctx, cfg)
	if err != nil {
		t.Fatalf("load %s: %v", example, err)
	}
	t.Cleanup(func() { p.Close(ctx) })
	return p
}

// cacheDir is the compilation cache shared by every test process (testbin.ShareWasmCache).
var cacheDir = testbin.ShareWasmCache()

// wantTool calls a tool and checks its exact result.
func wantTool(t *testing.T, p *sandbox.Plugin, tool, args string, isError bool, text string) {
	t.Helper()
	res, err := p.InvokeTool(context.Background(), tool, []byte(args))
	if err != nil {
		t.Fatalf("CallTool(%s, %s): %v", tool, args, err)
	}
	if res.IsError != isError || res.Text() != text {
		t.Errorf("%s(%s) = isError=%v %q, want isError=%v %q", tool, args, res.IsError, res.Text(), isError, text)
	}
}

// callExport calls a hook export and returns its output, failing on a fault.
func callExport(t *testing.T, p *sandbox.Plugin, export string, in any) string {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.CallExport(context.Background(), export, b)
	if err != nil {
		t.Fatalf("%s(%s): %v", export, b, err)
	}
	return string(out)
}

// wantJSON compares JSON texts after compacting both.
func wantJSON(t *testing.T, what, got, want string) {
	t.Helper()
	if compact(t, got) != compact(t, want) {
		t.Errorf("%s:\n got %s\nwant %s", what, got, want)
	}
}

func compact(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, s)
	}
	b, _ := json.Marshal(v)
	return strings.TrimSpace(string(b))
}
