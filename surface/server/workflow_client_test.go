package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The official AG-UI client (which verifies the event order and each event's schema)
// runs a workflow over POST /v1/workflows/NAME/runs: steps as STEP_STARTED/FINISHED, an
// approval step as an interrupt, and its resume.
func TestOfficialAGUIClientRunsAWorkflowAndResumesItsApproval(t *testing.T) {
	clientDir, _ := filepath.Abs("testdata/agui-client")
	if _, err := os.Stat(filepath.Join(clientDir, "node_modules/@ag-ui/client")); err != nil {
		t.Fatalf("@ag-ui/client is not installed: run `make deps` (npm ci in %s): %v", clientDir, err)
	}
	dir := t.TempDir()
	manifest := writeManifest(t, dir, `{"turns": []}`, "", true)
	f, err := os.OpenFile(manifest, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(f, `
[workflows.gated]
inputs = { type = "object", required = ["n"], properties = { n = { type = "number" } } }
[[workflows.gated.steps]]
id = "total"
tool = "calc"
arguments = { expression = "${string(inputs.n)} * 2" }
[[workflows.gated.steps]]
id = "big"
tool = "calc"
if = "steps.total.output > 100.0"
arguments = { expression = "1" }
[[workflows.gated.steps]]
id = "ok"
approval = "Keep ${steps.total.output}?"
[[workflows.gated.steps]]
id = "kept"
tool = "calc"
depends_on = ["ok"]
arguments = { expression = "${string(steps.total.output)} + 1" }
output = "kept"
`)
	f.Close()
	_, ts := serveHost(t, manifest, "tok-wf")
	cmd := exec.Command("node", "workflow.mjs", ts.URL, "tok-wf", "gated")
	cmd.Dir = clientDir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node client: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
	}
	var out struct {
		Runs []struct {
			Events            []map[string]any `json:"events"`
			PendingInterrupts []string         `json:"pendingInterrupts"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || len(out.Runs) != 2 {
		t.Fatalf("client output: %v\n%s", err, stdout.String())
	}
	render := func(evs []map[string]any) string {
		var s []string
		for _, e := range evs {
			switch e["type"] {
			case "STEP_STARTED", "STEP_FINISHED":
				s = append(s, fmt.Sprint(e["type"], " ", e["stepName"]))
			case "CUSTOM":
				v := e["value"].(map[string]any)
				s = append(s, fmt.Sprintf("CUSTOM %v=%v", v["step"], v["status"]))
			case "RUN_FINISHED":
				res, _ := json.Marshal(e["result"])
				s = append(s, fmt.Sprintf("RUN_FINISHED %v %s", e["outcome"].(map[string]any)["type"], res))
			default:
				s = append(s, fmt.Sprint(e["type"]))
			}
		}
		return strings.Join(s, "\n")
	}
	want1 := strings.Join([]string{"RUN_STARTED", "STEP_STARTED total", "STEP_FINISHED total", "CUSTOM total=ok",
		"STEP_STARTED big", "STEP_FINISHED big", "CUSTOM big=skipped", "STEP_STARTED ok", "CUSTOM ok=waiting", "STEP_FINISHED ok",
		`RUN_FINISHED interrupt {"output":null,"reason":"","status":"interrupted"}`}, "\n")
	if got := render(out.Runs[0].Events); got != want1 || strings.Join(out.Runs[0].PendingInterrupts, ",") != "ok" {
		t.Fatalf("first run:\n%s\nwant:\n%s\npending %v", got, want1, out.Runs[0].PendingInterrupts)
	}
	want2 := strings.Join([]string{"RUN_STARTED", "STEP_STARTED ok", "STEP_FINISHED ok", "CUSTOM ok=ok",
		"STEP_STARTED kept", "STEP_FINISHED kept", "CUSTOM kept=ok",
		`RUN_FINISHED success {"output":{"kept":43},"reason":"","status":"completed"}`}, "\n")
	if got := render(out.Runs[1].Events); got != want2 || len(out.Runs[1].PendingInterrupts) != 0 {
		t.Fatalf("resumed run:\n%s\nwant:\n%s", got, want2)
	}
}
