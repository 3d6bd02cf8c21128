package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store"
	"github.com/agenthost/agenthost/workflow"
)

// workflowEnv is a manifest with the files, text, calc and http_get example plugins and
// the seed's pipeline: collect (read a file) → preprocess (extract the figures) →
// analyse (double each, in parallel) → report (GET the report URL with the values);
// then alert (only above a threshold) → escalate, a branch the condition skips.
func workflowEnv(t *testing.T, extra string) *agentEnv {
	t.Helper()
	build := exec.Command("bash", "scripts/plugins.d/examples.sh", "files", "text", "calc", "http_get")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build examples: %v\n%s", err, out)
	}
	dir := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "data"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "data", "sales.txt"), []byte("north 12\nsouth 7\neast 30\n"), 0o644))
	m := `[store]
kind = "sqlite"
path = "sessions.db"
` + examplePlugin("files", "tool", "[plugins.permissions]\nallowed_paths = { \"ro:data\" = \"/data\" }") +
		examplePlugin("text", "tool", "") + examplePlugin("calc", "tool", "") +
		examplePlugin("http_get", "tool", "[plugins.permissions]\nallowed_hosts = [\"127.0.0.1\"]\ntimeout = \"60s\"") + `
[workflows.pipeline]
description = "Double the figures of a sales file and report them"
max_parallel = 3
inputs = { type = "object", required = ["path", "report_url"], properties = { path = { type = "string" }, report_url = { type = "string" } } }

[[workflows.pipeline.steps]]
id = "collect"
tool = "read_file"
arguments = { path = "${inputs.path}" }

[[workflows.pipeline.steps]]
id = "preprocess"
tool = "regex_extract"
arguments = { text = "${steps.collect.output}", pattern = '\d+' }

[[workflows.pipeline.steps]]
id = "analyse"
tool = "calc"
for_each = "steps.preprocess.output"
arguments = { expression = "${item} * 2" }

[[workflows.pipeline.steps]]
id = "report"
tool = "http_get"
arguments = { url = "${inputs.report_url}?values=${steps.analyse.output.map(x, string(x)).join(',')}" }
output = "report"

[[workflows.pipeline.steps]]
id = "alert"
tool = "calc"
if = "steps.analyse.output.exists(x, x > 100.0)"
arguments = { expression = "${steps.analyse.output.map(x, string(x)).join('+')}" }
output = "alert"

[[workflows.pipeline.steps]]
id = "escalate"
tool = "http_get"
depends_on = ["alert"]
arguments = { url = "${inputs.report_url}?escalate=1" }
` + extra
	p := filepath.Join(dir, "agent.toml")
	must(os.WriteFile(p, []byte(m), 0o644))
	return &agentEnv{dir: dir, manifest: p}
}

// toolCallsIn counts the tool_call events stored in each of the sessions.
func toolCallsIn(t *testing.T, e *agentEnv, sessions ...string) map[string]int {
	t.Helper()
	db := filepath.Join(e.dir, "sessions.db")
	if _, err := os.Stat(db); err != nil { // the example's store
		db = filepath.Join(e.dir, ".agenthost", "sessions.db")
	}
	st, err := store.OpenSQLite(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	out := map[string]int{}
	for _, s := range sessions {
		es, err := st.Load(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range es {
			if en.Event != nil && en.Event.Type == loop.EventToolCall {
				out[s]++
			}
		}
	}
	return out
}

type wfResult struct {
	Workflow string         `json:"workflow"`
	RunID    string         `json:"run_id"`
	Status   string         `json:"status"`
	Outputs  map[string]any `json:"outputs"`
	Error    string         `json:"error"`
	Waiting  []string       `json:"waiting"`
}

func decodeWF(t *testing.T, r result) wfResult {
	t.Helper()
	var out wfResult
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("stdout is not the result JSON: %v\n%s\nstderr:\n%s", err, r.stdout, r.stderr)
	}
	return out
}

func TestE2E_Workflow_PipelineFansOutAndAFalseConditionSkipsItsBranch(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.URL.RawQuery)
		fmt.Fprintf(w, "reported %s", r.URL.Query().Get("values"))
	}))
	defer srv.Close()
	e := workflowEnv(t, "")
	list := e.agenthost(t, "workflow", "list")
	if list.code != 0 || !strings.Contains(list.stdout, "pipeline  collect,preprocess,analyse,report,alert,escalate  Double the figures") {
		t.Fatalf("list: %d\n%s%s", list.code, list.stdout, list.stderr)
	}
	r := e.agenthost(t, "workflow", "run", "pipeline", "--run-id", "w1", "--input",
		fmt.Sprintf(`{"path":"/data/sales.txt","report_url":%q}`, srv.URL+"/report"))
	res := decodeWF(t, r)
	if r.code != 0 || res.Status != "completed" || res.Outputs["report"] != "reported 24,14,60" || res.Outputs["alert"] != nil {
		t.Fatalf("exit %d: %+v\n%s", r.code, res, r.stderr)
	}
	if got.Load() != "values=24,14,60" {
		t.Fatalf("the report server got %v", got.Load())
	}
	for _, line := range []string{"▸ analyse (tool, 3 items)\n✓ analyse ok [24,14,60]\n", "– alert skipped: if is false: steps.analyse.output.exists(x, x > 100.0)\n",
		"– escalate skipped: dependency alert was skipped\n", "workflow pipeline run w1 completed\n"} {
		if !strings.Contains(r.stderr, line) {
			t.Fatalf("progress lacks %q:\n%s", line, r.stderr)
		}
	}
	// Every step's call went through the tool pipeline and is stored, once each; the
	// skipped branch made none.
	calls := toolCallsIn(t, e, "workflow:pipeline:w1~collect", "workflow:pipeline:w1~preprocess", "workflow:pipeline:w1~analyse~0", "workflow:pipeline:w1~analyse~1", "workflow:pipeline:w1~analyse~2", "workflow:pipeline:w1~report", "workflow:pipeline:w1~alert", "workflow:pipeline:w1~escalate")
	want := map[string]int{"workflow:pipeline:w1~collect": 1, "workflow:pipeline:w1~preprocess": 1, "workflow:pipeline:w1~analyse~0": 1, "workflow:pipeline:w1~analyse~1": 1, "workflow:pipeline:w1~analyse~2": 1, "workflow:pipeline:w1~report": 1}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Fatalf("stored tool calls %v, want %v", calls, want)
	}
	// Bad inputs are a usage error before anything runs.
	bad := e.agenthost(t, "workflow", "run", "pipeline", "--input", `{"path": 3}`)
	if bad.code != 2 || !strings.Contains(bad.stderr, "invalid workflow inputs") {
		t.Fatalf("bad inputs: %d %s", bad.code, bad.stderr)
	}
}

func TestE2E_Workflow_SIGKILLMidRunThenResumeRepeatsNoFinishedStep(t *testing.T) {
	var hits atomic.Int64
	inFlight := make(chan struct{}, 1)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			inFlight <- struct{}{}
			<-release // the first report hangs until the process that made it is dead
		}
		fmt.Fprintf(w, "reported %s", r.URL.Query().Get("values"))
	}))
	defer srv.Close()
	defer close(release)
	e := workflowEnv(t, "")
	input := fmt.Sprintf(`{"path":"/data/sales.txt","report_url":%q}`, srv.URL+"/report")
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", e.manifest, "workflow", "run", "pipeline", "--run-id", "k1", "--input", input)
	cmd.Dir = e.dir
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			progress.WriteString(sc.Text() + "\n")
		}
	}()
	select {
	case <-inFlight:
	case <-time.After(readyBound):
		cmd.Process.Kill()
		t.Fatal("the report step never called the server")
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL while the report call is in flight
		t.Fatal(err)
	}
	cmd.Wait()
	r := e.agenthost(t, "workflow", "run", "pipeline", "--run-id", "k1")
	res := decodeWF(t, r)
	if r.code != 0 || res.Status != "completed" || res.Outputs["report"] != "reported 24,14,60" {
		t.Fatalf("resume: exit %d %+v\n%s", r.code, res, r.stderr)
	}
	if !strings.Contains(r.stderr, "workflow pipeline run k1 resumed\n▸ report (tool)\n✓ report ok") || strings.Contains(r.stderr, "▸ collect") || strings.Contains(r.stderr, "▸ analyse") {
		t.Fatalf("the resume ran more than the unfinished step:\n%s", r.stderr)
	}
	// Counted in the store: the finished steps were called once; the report twice (the
	// call the kill cut, stored before it ran, and the resume's).
	calls := toolCallsIn(t, e, "workflow:pipeline:k1~collect", "workflow:pipeline:k1~preprocess", "workflow:pipeline:k1~analyse~0", "workflow:pipeline:k1~analyse~1", "workflow:pipeline:k1~analyse~2", "workflow:pipeline:k1~report")
	want := map[string]int{"workflow:pipeline:k1~collect": 1, "workflow:pipeline:k1~preprocess": 1, "workflow:pipeline:k1~analyse~0": 1, "workflow:pipeline:k1~analyse~1": 1, "workflow:pipeline:k1~analyse~2": 1, "workflow:pipeline:k1~report": 2}
	if fmt.Sprint(calls) != fmt.Sprint(want) || hits.Load() != 2 {
		t.Fatalf("stored tool calls %v (server hits %d), want %v", calls, hits.Load(), want)
	}
	// Running a completed run again only reports it.
	again := e.agenthost(t, "workflow", "run", "pipeline", "--run-id", "k1")
	if again.code != 0 || decodeWF(t, again).Status != "completed" || hits.Load() != 2 {
		t.Fatalf("rerun: %d %s hits %d", again.code, again.stderr, hits.Load())
	}
	st, _ := store.OpenSQLite(filepath.Join(e.dir, "sessions.db"))
	defer st.Close()
	rec, ok, err := workflow.LoadRecord(context.Background(), st, "pipeline", "k1")
	if err != nil || !ok || rec.Status != workflow.RunCompleted || rec.Steps["report"].Attempts != 1 || rec.Steps["collect"].Attempts != 1 {
		t.Fatalf("record %v %v %+v", err, ok, rec)
	}
}

func TestE2E_Workflow_ApprovalStepWaitsAndAResumeDecides(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "sent") }))
	defer srv.Close()
	e := workflowEnv(t, `
[workflows.gated]
[[workflows.gated.steps]]
id = "total"
tool = "calc"
arguments = { expression = "2 * 21" }
[[workflows.gated.steps]]
id = "ok"
approval = "Send the total ${steps.total.output}?"
[[workflows.gated.steps]]
id = "send"
tool = "http_get"
depends_on = ["ok"]
arguments = { url = "${inputs.url}" }
output = "sent"
`)
	in := fmt.Sprintf(`{"url":%q}`, srv.URL)
	r := e.agenthost(t, "workflow", "run", "gated", "--run-id", "g1", "--input", in)
	res := decodeWF(t, r)
	if r.code != 3 || res.Status != "interrupted" || strings.Join(res.Waiting, ",") != "ok" || !strings.Contains(r.stderr, "? ok waiting for approval: Send the total 42?") ||
		!strings.Contains(r.stderr, "(resume with: agenthost workflow run gated --run-id g1 --approve ok, or --reject ok)") {
		t.Fatalf("exit %d %+v\n%s", r.code, res, r.stderr)
	}
	r = e.agenthost(t, "workflow", "run", "gated", "--run-id", "g1", "--approve", "ok")
	if res = decodeWF(t, r); r.code != 0 || res.Outputs["sent"] != "sent" {
		t.Fatalf("exit %d %+v\n%s", r.code, res, r.stderr)
	}
	if c := toolCallsIn(t, e, "workflow:gated:g1~total"); c["workflow:gated:g1~total"] != 1 {
		t.Fatalf("total called %d times", c["workflow:gated:g1~total"])
	}
}

// The example manifest (examples/workflows) loads and runs as its comments say.
func TestE2E_Workflow_ExampleManifestRunsAsDocumented(t *testing.T) {
	build := exec.Command("bash", "scripts/plugins.d/examples.sh", "files", "text", "calc")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build examples: %v\n%s", err, out)
	}
	src := filepath.Join(repoRoot, "examples", "workflows")
	b, err := os.ReadFile(filepath.Join(src, "agent.toml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	m := strings.ReplaceAll(string(b), `"../../plugins/`, `"`+filepath.Join(repoRoot, "plugins")+"/")
	data, _ := os.ReadFile(filepath.Join(src, "data", "sales.txt"))
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "data", "sales.txt"), data, 0o644)
	os.WriteFile(filepath.Join(dir, "agent.toml"), []byte(m), 0o644)
	flow, _ := os.ReadFile(filepath.Join(src, "flows", "double.yaml"))
	os.MkdirAll(filepath.Join(dir, "flows"), 0o755)
	os.WriteFile(filepath.Join(dir, "flows", "double.yaml"), flow, 0o644)
	e := &agentEnv{dir: dir, manifest: filepath.Join(dir, "agent.toml")}

	r := e.agenthost(t, "workflow", "run", "sales", "--input", `{"path": "/data/sales.txt"}`, "--run-id", "demo")
	if res := decodeWF(t, r); r.code != 3 || res.Status != "interrupted" || strings.Join(res.Waiting, ",") != "publish" ||
		!strings.Contains(r.stderr, "? publish waiting for approval: Publish the total 98?") {
		t.Fatalf("exit %d %+v\n%s", r.code, res, r.stderr)
	}
	r = e.agenthost(t, "workflow", "run", "sales", "--run-id", "demo", "--approve", "publish")
	res := decodeWF(t, r)
	pub, _ := res.Outputs["published"].(map[string]any)
	if r.code != 0 || res.Outputs["total"] != 98.0 || res.Outputs["alert"] != nil || pub["words"] != 2.0 {
		t.Fatalf("exit %d %+v\n%s", r.code, res, r.stderr)
	}
	// The analyse step ran the double workflow (from flows/double.yaml) once per figure,
	// each a stored run of its own: running it again finds it completed.
	r = e.agenthost(t, "workflow", "run", "double", "--run-id", "demo.analyse.0")
	if res := decodeWF(t, r); r.code != 0 || res.Status != "completed" || res.Outputs["doubled"] == nil {
		t.Fatalf("exit %d %+v\n%s", r.code, res, r.stderr)
	}
	if c := toolCallsIn(t, e, "workflow:double:demo.analyse.0~times_two"); c["workflow:double:demo.analyse.0~times_two"] != 1 {
		t.Fatalf("the sub-run's calc was called %d times", c["workflow:double:demo.analyse.0~times_two"])
	}

	// It needs no model, and serve does not ask for one: its workflows run over HTTP.
	s := e.serve(t)
	run := startSSE(t, post(t, s.base+"/v1/workflows/sales/runs", `{"runId": "h1", "input": {"path": "/data/sales.txt"}}`))
	end := run.until(t, "RUN_FINISHED")
	oc, _ := end["outcome"].(map[string]any)
	if in, _ := oc["interrupts"].([]any); len(in) != 1 || in[0].(map[string]any)["message"] != "Publish the total 98?" {
		t.Fatalf("RUN_FINISHED %v\n%s", end, s.log())
	}
	if !strings.Contains(s.log(), "agenthost: no provider in the manifest: serving tools and workflows") {
		t.Fatalf("serve log:\n%s", s.log())
	}
}
