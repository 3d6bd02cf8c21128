package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcp serve offers each declared workflow as workflow_NAME: a call runs it on the
// engine (its tool steps through the pipeline), the outputs come back structured, each
// step's end is progress, bad inputs and an approval wait are isError results, and a
// workflow with prompt steps is left out without --agent.
func TestE2E_MCPServeOffersWorkflowsAsTools(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "agent.toml")
	os.WriteFile(p, []byte(fmt.Sprintf(`[store]
kind = "sqlite"
path = "sessions.db"
[[plugins]]
name = "calc"
wasm = %q
[workflows.double_sum]
description = "Double each number and add them up"
inputs = { type = "object", required = ["xs"], properties = { xs = { type = "array", items = { type = "number" } } } }
[[workflows.double_sum.steps]]
id = "double"
tool = "calc"
for_each = "inputs.xs"
arguments = { expression = "${string(item)} * 2" }
[[workflows.double_sum.steps]]
id = "sum"
tool = "calc"
arguments = { expression = "${steps.double.output.map(x, string(x)).join(' + ')}" }
output = "total"
[workflows.gated]
[[workflows.gated.steps]]
id = "ok"
approval = "go on?"
[[workflows.gated.steps]]
id = "after"
tool = "calc"
depends_on = ["ok"]
arguments = { expression = "1" }
[workflows.chat]
[[workflows.chat.steps]]
id = "ask"
prompt = "hello"
`, calcWasm)), 0o644)
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", p, "mcp", "serve")
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), readyBound)
	defer cancel()
	var mu sync.Mutex
	var progress []string
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, fmt.Sprintf("%v/%v %s", r.Params.Progress, r.Params.Total, r.Params.Message))
			mu.Unlock()
		}})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "calc,workflow_double_sum,workflow_gated" {
		t.Fatalf("tools %v", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "workflow_double_sum", Arguments: map[string]any{"xs": []int{1, 2, 3}},
		Meta: mcp.Meta{"progressToken": "w1"}})
	if err != nil || res.IsError {
		t.Fatalf("workflow_double_sum: %v %+v", err, res)
	}
	out, _ := res.StructuredContent.(map[string]any)
	outputs, _ := out["outputs"].(map[string]any)
	if outputs["total"] != 12.0 || !strings.HasPrefix(fmt.Sprint(out["run_id"]), "wf-") {
		t.Fatalf("structured %#v", res.StructuredContent)
	}
	deadline := time.Now().Add(readyBound) // notifications may trail the result
	for {
		mu.Lock()
		got := strings.Join(progress, "|")
		mu.Unlock()
		if got == "1/2 double ok|2/2 sum ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("progress %q", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "workflow_double_sum", Arguments: map[string]any{"xs": "nope"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "invalid workflow inputs") {
		t.Fatalf("bad inputs: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "workflow_gated", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "waits for approval of ok; decide with `agenthost workflow run gated --run-id wf-") {
		t.Fatalf("gated: %v %+v", err, res)
	}
	cs.Close()
	if !strings.Contains(stderr.String(), "not offered over MCP: workflow_chat: has prompt steps, which need the provider (--agent)") {
		t.Fatalf("stderr: %s", stderr.String())
	}
}
