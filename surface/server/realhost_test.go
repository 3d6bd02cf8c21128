package server

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testbin"
)

// The tests in this file and the benchmark serve a real host: the scripted provider
// binary (built once per test process, testbin) and the calc Wasm plugin from
// scripts/plugins.sh.

var (
	pluginsOnce sync.Once
	pluginsErr  error
)

func repoRoot(tb testing.TB) string {
	tb.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		tb.Fatal(err)
	}
	return root
}

// realDeps builds the scripted provider and makes sure calc.wasm exists.
func realDeps(tb testing.TB) (provider, calc string) {
	tb.Helper()
	root := repoRoot(tb)
	provider = testbin.Path(tb, testbin.Scripted)
	pluginsOnce.Do(func() {
		if _, err := os.Stat(filepath.Join(root, "plugins/examples/go/calc/calc.wasm")); err != nil {
			cmd := exec.Command("bash", "scripts/plugins.sh")
			cmd.Dir = root
			if b, err := cmd.CombinedOutput(); err != nil {
				pluginsErr = fmt.Errorf("build plugins: %v\n%s", err, b)
			}
		}
	})
	if pluginsErr != nil {
		tb.Fatal(pluginsErr)
	}
	calc = filepath.Join(root, "plugins/examples/go/calc/calc.wasm")
	if _, err := os.Stat(calc); err != nil {
		tb.Fatalf("calc plugin: %v (scripts/plugins.sh builds it)", err)
	}
	return provider, calc
}

// writeManifest writes agent.toml and the fixture into dir. policy is added to
// [agent.tool_policy]; the store is SQLite (sessions.db) unless memory is set.
func writeManifest(tb testing.TB, dir, fixture, policy string, memory bool) string {
	tb.Helper()
	provider, calc := realDeps(tb)
	if err := os.WriteFile(filepath.Join(dir, "script.json"), []byte(fixture), 0o644); err != nil {
		tb.Fatal(err)
	}
	st := "kind = \"sqlite\"\npath = \"sessions.db\""
	if memory {
		st = "kind = \"memory\""
	}
	manifest := fmt.Sprintf(`[agent]
name = "served"
system_prompt = "You compute."
provider = "scripted"
model = "demo"
[agent.tool_policy]
%s

[providers.scripted]
command = %q
options = { script = "script.json" }

[store]
%s

[[plugins]]
name = "calc"
wasm = %q
[plugins.permissions]
timeout = "10s"
`, policy, provider, st, calc)
	p := filepath.Join(dir, "agent.toml")
	if err := os.WriteFile(p, []byte(manifest), 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

// serveHost opens the manifest as `agenthost serve` does and serves it with httptest.
func serveHost(tb testing.TB, manifest, token string) (*Server, *httptest.Server) {
	tb.Helper()
	h, err := host.Open(context.Background(), host.Options{Manifest: manifest, Approver: InterruptApprover{}})
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := New(Options{Agent: h.Agent, Store: h.Store, Token: token, Workflows: &Workflows{Find: h.Manifest.Workflow, List: h.Manifest.WorkflowNames, Engine: h.Workflows()}})
	if err != nil {
		tb.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Drain(ctx)
		ts.Close()
		_ = h.Close()
	})
	return srv, ts
}
