package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/workflow"
)

func TestOpenRefusesAWorkflowNamingAnUnknownTool(t *testing.T) {
	dir := t.TempDir()
	body := fmt.Sprintf(`[store]
kind = "memory"
[[plugins]]
name = "calc"
wasm = %q
[workflows.p]
[[workflows.p.steps]]
id = "a"
tool = "calc"
[[workflows.p.steps]]
id = "b"
tool = "clac"
`, calcWasm)
	p := filepath.Join(dir, "agent.toml")
	must(t, os.WriteFile(p, []byte(body), 0o644))
	_, err := Open(context.Background(), Options{Manifest: p, NoProvider: true, CacheDir: wasmCache})
	if err == nil || !strings.Contains(err.Error(), `agent.toml:12: workflows.p.steps[1].tool: unknown tool "clac" (tools: calc)`) {
		t.Fatalf("err = %v", err)
	}
}

func TestHostWorkflowStepsGoThroughTheToolPipeline(t *testing.T) {
	dir := t.TempDir()
	body := fmt.Sprintf(`[agent.tool_policy]
require_approval = ["calc"]
[store]
kind = "memory"
[[plugins]]
name = "calc"
wasm = %q
[workflows.p]
[[workflows.p.steps]]
id = "a"
tool = "calc"
arguments = { expression = "${string(inputs.n)} * 2" }
`, calcWasm)
	p := filepath.Join(dir, "agent.toml")
	must(t, os.WriteFile(p, []byte(body), 0o644))
	h, err := Open(context.Background(), Options{Manifest: p, NoProvider: true, CacheDir: wasmCache})
	must(t, err)
	defer h.Close()
	w, _ := h.Manifest.Workflow("p")
	res, err := h.Workflows().Run(context.Background(), w, workflow.RunInput{Inputs: []byte(`{"n": 21}`)}, nil)
	must(t, err)
	// require_approval holds for a workflow's call as for a model's: no approver, refused.
	if res.Record.Status != workflow.RunFailed || !strings.Contains(res.Record.Error, "approval") {
		t.Fatalf("%+v", res.Record)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
