package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/workflow"
)

// workflowEnv is the e2e manifest plus the files and text example plugins and two
// workflows: the seed's pipeline (collect → preprocess → analyse each item in parallel
// → report, with an alert branch a condition leaves out) and one behind an approval.
func workflowEnv(t *testing.T, scripts ...[2]string) *agentEnv {
	t.Helper()
	e := newEnv(t, "", "", scripts...)
	data := t.TempDir()
	os.WriteFile(filepath.Join(data, "sales.txt"), []byte("north 12\nsouth 7\neast 30\n"), 0o644)
	ex := func(p string) string { return filepath.Join(repoRoot, "plugins/examples/go", p) }
	appendManifest(t, e.manifest, fmt.Sprintf(`
[[plugins]]
name = "files"
wasm = %q
[plugins.permissions]
allowed_paths = { "ro:%s" = "/data" }
[[plugins]]
name = "text"
wasm = %q

[workflows.sales]
description = "Double each sale and report"
inputs = { type = "object", required = ["file"], properties = { file = { type = "string" } } }
output = "{'report': steps.report.output, 'doubled': steps.analyse.output, 'alert': steps.alert.status}"
[[workflows.sales.steps]]
id = "collect"
tool = "read_file"
args = { path = "/data/${inputs.file}" }
[[workflows.sales.steps]]
id = "preprocess"
tool = "regex_extract"
args = { text = "${steps.collect.output}", pattern = "[0-9]+" }
depends_on = ["collect"]
[[workflows.sales.steps]]
id = "analyse"
tool = "calc"
for_each = "steps.preprocess.output"
args = { expression = "${item} * 2" }
depends_on = ["preprocess"]
[[workflows.sales.steps]]
id = "alert"
tool = "calc"
if = "size(steps.preprocess.output) > 10"
args = { expression = "1" }
depends_on = ["preprocess"]
[[workflows.sales.steps]]
id = "report"
prompt = "Write a one-line report of these doubled sales: ${steps.analyse.output}"
depends_on = ["analyse"]

[workflows.guarded]
[[workflows.guarded.steps]]
id = "ok"
approval = "Compute 6*7 for ${inputs.who}?"
[[workflows.guarded.steps]]
id = "compute"
tool = "calc"
args = { expression = "6*7" }
depends_on = ["ok"]
`, ex("files/files.wasm"), data, ex("text/text.wasm")))
	return e
}

const reportTurn = `{"expect": {"contains": "doubled sales: [24,14,60]", "tools": ["calc", "read_file", "list_dir", "word_count", "regex_extract", "json_query"]}, "text": "Sales doubled: 98 in all."}`

// The seed's pipeline runs on real Wasm tools and the scripted model: arguments from
// inputs and earlier outputs, a parallel fan-out, a skipped branch, the output
// expression.
func TestE2E_AWorkflowRunsItsPipelineOnWasmTools(t *testing.T) {
	e := workflowEnv(t, [2]string{"scripted", `{"turns": [` + reportTurn + `]}`})
	r := e.agenthost(t, "workflow", "run", "sales", "--input", `{"file": "sales.txt"}`)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("output %q: %v", r.stdout, err)
	}
	if !sameJSONValue(out, map[string]any{"report": "Sales doubled: 98 in all.", "doubled": []any{24, 14, 60}, "alert": "skipped"}) {
		t.Fatalf("output = %v", out)
	}
	for _, want := range []string{"  analyse[2]: done 60", "  alert: skipped", "workflow done"} {
		if !strings.Contains(r.stderr, want) {
			t.Fatalf("progress lacks %q:\n%s", want, r.stderr)
		}
	}
	if r := e.agenthost(t, "workflow", "list"); r.code != 0 || !strings.Contains(r.stdout, "sales: 5 steps — Double each sale and report") {
		t.Fatalf("list: %s %s", r.stdout, r.stderr)
	}
	if r := e.agenthost(t, "workflow", "run", "sales", "--input", `{"path": 1}`); r.code != 1 || !strings.Contains(r.stderr, "inputs:") {
		t.Fatalf("inputs against the schema: exit %d %s", r.code, r.stderr)
	}
}

// A workflow killed (SIGKILL) while a step runs resumes with --run ID: the finished
// steps are not done again (they show as earlier), only the one that was running runs.
func TestE2E_AWorkflowKilledMidwayResumesWithoutRepeatingSteps(t *testing.T) {
	e := workflowEnv(t,
		[2]string{"slow", `{"turns": [{"delay_ms": 600000, "text": "never"}]}`},
		[2]string{"fast", `{"turns": [` + reportTurn + `]}`})
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", e.manifest, "workflow", "run", "sales", "--provider", "slow", "--json",
		"--input", `{"file": "sales.txt"}`)
	cmd.Dir = e.dir
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var run string
	started := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var ev workflow.Event
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				run = ev.Run
				if ev.Type == "step_started" && ev.Step == "report" {
					close(started)
					return
				}
			}
		}
	}()
	select {
	case <-started:
	case <-time.After(readyBound):
		t.Fatal("the report step never started")
	}
	cmd.Process.Kill()
	cmd.Wait()
	r := e.agenthost(t, "workflow", "run", "sales", "--provider", "fast", "--run", run, "--json")
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var startedSteps, earlier []string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var ev workflow.Event
		json.Unmarshal([]byte(line), &ev)
		switch {
		case ev.Type == "step_started":
			startedSteps = append(startedSteps, ev.Step)
		case ev.Type == "step_finished" && ev.Resumed:
			earlier = append(earlier, ev.Step)
		}
	}
	slices.Sort(earlier)
	if !slices.Equal(startedSteps, []string{"report"}) || !slices.Equal(earlier, []string{"alert", "analyse", "collect", "preprocess"}) {
		t.Fatalf("resumed run started %q, found ended %q\n%s", startedSteps, earlier, r.stdout)
	}
	if !strings.Contains(r.stdout, `"type":"workflow_finished","run":"`+run+`","status":"done","output":{"alert":"skipped","doubled":[24,14,60],"report":"Sales doubled: 98 in all."}`) {
		t.Fatalf("resumed output:\n%s", r.stdout)
	}
}

// An approval step asks the person running the workflow: refused, the workflow fails
// before its tool step; approved, it goes on.
func TestE2E_AnApprovalStepStopsTheWorkflowUnlessApproved(t *testing.T) {
	e := workflowEnv(t, [2]string{"scripted", `{"turns": []}`})
	r := e.agenthost(t, "workflow", "run", "guarded", "--approve", "none", "--input", `{"who": "ana"}`)
	if r.code != 1 || !strings.Contains(r.stderr, "workflow guarded failed: step ok: not approved: rejected by --approve none") ||
		strings.Contains(r.stderr, "compute: started") {
		t.Fatalf("refused: exit %d\n%s", r.code, r.stderr)
	}
	r = e.agenthost(t, "workflow", "run", "guarded", "--approve", "all", "--input", `{"who": "ana"}`)
	if r.code != 0 || !strings.Contains(r.stdout, `"compute": 42`) {
		t.Fatalf("approved: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// A definition error is a manifest error naming the key.
func TestE2E_AWorkflowDefinitionErrorNamesItsKey(t *testing.T) {
	e := workflowEnv(t, [2]string{"scripted", `{"turns": []}`})
	b := strings.Replace(string(must(os.ReadFile(e.manifest))), `depends_on = ["ok"]`, `depends_on = ["nope"]`, 1)
	os.WriteFile(e.manifest, []byte(b), 0o644)
	if r := e.agenthost(t, "workflow", "list"); r.code != 2 || !strings.Contains(r.stderr, `agent.toml:74: workflows.guarded.steps[1].depends_on: no other step "nope"`) {
		t.Fatalf("exit %d %s", r.code, r.stderr)
	}
}

func sameJSONValue(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
