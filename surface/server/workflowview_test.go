package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/workflow"
)

const dagWorkflows = `
[workflows.pipe]
description = "double each, sum them in a sub-workflow, shout only when asked"
inputs = { type = "object", required = ["xs"] }
[[workflows.pipe.steps]]
id = "collect"
tool = "calc"
arguments = { expression = "${string(size(inputs.xs))}" }
[[workflows.pipe.steps]]
id = "double"
tool = "calc"
depends_on = ["collect"]
for_each = "inputs.xs"
arguments = { expression = "${string(item)} * 2" }
[[workflows.pipe.steps]]
id = "total"
workflow = "sum"
arguments = { xs = "${steps.double.output}" }
[[workflows.pipe.steps]]
id = "shout"
tool = "calc"
if = "has(inputs.shout)"
arguments = { expression = "${string(steps.total.output.s)} * 10" }
[workflows.sum]
[[workflows.sum.steps]]
id = "add"
tool = "calc"
arguments = { expression = "${inputs.xs.map(x, string(x)).join(' + ')}" }
output = "s"
`

// dagHarness opens the console on a stored workflow run (#workflow=pipe&wfrun=RUN),
// reads the DAG's boxes and arrows, picks the fan-out step and opens its first item's
// session, then opens the sub-workflow's run from its step; it posts what it saw.
const dagHarness = `<!doctype html><html><body style="margin:0">
<iframe id="f" style="border:0;width:1200px;height:800px"></iframe>
<script>
const f = document.getElementById("f");
f.src = "/" + location.hash;
function waitFor(cond, then) { const t = () => { let ok = false; try { ok = cond(); } catch (e) {} ok ? then() : setTimeout(t, 50); }; t(); }
f.onload = () => {
  const d = f.contentDocument, $ = (id) => d.getElementById(id), out = {};
  const nodes = () => [...d.querySelectorAll(".wf-node")].map((n) => n.dataset.step + "=" + n.dataset.status + "@" + n.getAttribute("transform"));
  waitFor(() => d.body.dataset.workflow === "pipe/wf-dag1" && d.querySelectorAll(".wf-node").length === 4, () => {
    out.nodes = nodes();
    out.edges = [...d.querySelectorAll(".wf-edge")].map((e) => e.dataset.from + ">" + e.dataset.to);
    out.runs = [...$("wf-run").options].map((o) => o.value);
    out.groups = [...d.querySelectorAll("#sessions > li.wf-run-group")].map((g) => g.dataset.run + ">" + [...g.querySelectorAll("li.wf-run-group")].map((c) => c.dataset.run).join(","));
    out.chats = [...d.querySelectorAll("#sessions > li.session")].map((l) => l.dataset.id);
    d.querySelector('.wf-node[data-step="double"]').dispatchEvent(new MouseEvent("click", { bubbles: true }));
    out.detail = $("wf-detail").textContent;
    out.sessions = [...d.querySelectorAll(".wf-session")].map((b) => b.dataset.session);
    d.querySelector(".wf-session").click();
    waitFor(() => $("thread").textContent === "workflow:pipe:wf-dag1~double~0" && d.querySelector(".tool-card"), () => {
      out.opened = $("conversation").textContent;
      $("show-workflows").click();
      waitFor(() => d.body.dataset.workflow === "pipe/" && d.querySelectorAll(".wf-node").length === 4, () => {
        out.definition = nodes();
        $("wf-run").value = "wf-dag1"; $("wf-run").dispatchEvent(new Event("change"));
        waitFor(() => d.body.dataset.workflow === "pipe/wf-dag1", () => {
          d.querySelector('.wf-node[data-step="total"]').dispatchEvent(new MouseEvent("click", { bubbles: true }));
          d.querySelector(".wf-session").click();
          waitFor(() => d.body.dataset.workflow === "sum/wf-dag1.total" && d.querySelectorAll(".wf-node").length === 1, () => {
            out.sub = nodes();
            fetch("/harness-result", { method: "POST", body: JSON.stringify(out) });
          });
        });
      });
    });
  });
};
</script></body></html>`

// The console draws a workflow's DAG from GET /v1/workflows and colours each step by the
// stored run's record: arrows for every dependency (declared or implied), columns by
// depth, the skipped branch shown skipped; a fan-out step opens its items' sessions and a
// workflow step its sub-run; the sidebar folds the run's sessions (and the sub-run's)
// under the run. Checked in Chromium against the record; a screenshot is kept.
func TestConsoleWorkflowDAGMatchesTheStoredRun(t *testing.T) {
	dir := t.TempDir()
	manifest := writeManifest(t, dir, `{"turns": []}`, "", false)
	f, _ := os.OpenFile(manifest, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprint(f, dagWorkflows)
	f.Close()
	h, err := host.Open(context.Background(), host.Options{Manifest: manifest, Approver: InterruptApprover{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	w, _ := h.Manifest.Workflow("pipe")
	res, err := h.Workflows().Run(context.Background(), w, workflow.RunInput{RunID: "wf-dag1", Inputs: json.RawMessage(`{"xs":[1,2,3]}`)}, nil)
	if err != nil || res.Record.Status != workflow.RunCompleted {
		t.Fatalf("run: %v %+v", err, res.Record)
	}
	srv, err := New(Options{Agent: h.Agent, Store: h.Store, Token: "tok",
		Workflows: &Workflows{Find: h.Manifest.Workflow, List: h.Manifest.WorkflowNames, Engine: h.Workflows()}})
	if err != nil {
		t.Fatal(err)
	}
	ts, results := serveHarness(t, srv, "/dag-harness", dagHarness, 1)

	var got struct {
		Nodes, Edges, Runs, Sessions, Definition, Sub, Groups, Chats []string
		Detail, Opened                                               string
	}
	out := runHarness(t, results, ts.URL+"/dag-harness#token=tok&workflow=pipe&wfrun=wf-dag1")
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("harness result %q: %v", out, err)
	}
	// The boxes say what the record says, in columns by depth.
	rec := res.Record
	var want []string
	cols := map[string]int{"collect": 0, "double": 1, "total": 2, "shout": 3}
	for _, id := range []string{"collect", "double", "total", "shout"} {
		want = append(want, fmt.Sprintf("%s=%s@translate(%d,16)", id, rec.Steps[id].Status, 16+cols[id]*206))
	}
	if strings.Join(got.Nodes, " ") != strings.Join(want, " ") {
		t.Fatalf("nodes\n got %v\nwant %v", got.Nodes, want)
	}
	if rec.Steps["shout"].Status != workflow.StatusSkipped {
		t.Fatalf("shout should have been skipped: %+v", rec.Steps["shout"])
	}
	sort.Strings(got.Edges)
	if strings.Join(got.Edges, " ") != "collect>double double>total total>shout" {
		t.Fatalf("edges %v", got.Edges)
	}
	// The run's step and item sessions are not chats; the sub-workflow's run sits under its parent's.
	if len(got.Chats) != 0 || strings.Join(got.Groups, " ") != "workflow:pipe:wf-dag1>workflow:sum:wf-dag1.total" {
		t.Fatalf("sidebar: chats %v, workflow runs %v", got.Chats, got.Groups)
	}
	if strings.Join(got.Runs, ",") != ",wf-dag1" {
		t.Fatalf("runs %v", got.Runs)
	}
	if !strings.HasPrefix(got.Detail, "double tool calc ok") || !strings.Contains(got.Detail, "attempts3") || !strings.Contains(got.Detail, "items3") {
		t.Fatalf("detail %s", got.Detail)
	}
	if strings.Join(got.Sessions, ",") != "workflow:pipe:wf-dag1~double~0,workflow:pipe:wf-dag1~double~1,workflow:pipe:wf-dag1~double~2" {
		t.Fatalf("sessions %v", got.Sessions)
	}
	if !strings.Contains(got.Opened, "calc") || !strings.Contains(got.Opened, "2") {
		t.Fatalf("the item's session shows %q", got.Opened)
	}
	for _, n := range got.Definition {
		if !strings.Contains(n, "=pending@") {
			t.Fatalf("the definition without a run: %v", got.Definition)
		}
	}
	if len(got.Sub) != 1 || !strings.HasPrefix(got.Sub[0], "add=ok@") {
		t.Fatalf("the sub-run: %v", got.Sub)
	}
	shotDir := os.Getenv("AGENTHOST_ARTIFACTS")
	if shotDir == "" {
		shotDir = t.TempDir()
	}
	shot := filepath.Join(shotDir, "console-workflow.png")
	chromium(t, "--window-size=1200,800", "--screenshot="+shot, ts.URL+"/#token=tok&workflow=pipe&wfrun=wf-dag1")
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 10_000 {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	t.Logf("screenshot: %s", shot)
}

// The GET routes answer what the store holds, and refuse what they cannot answer.
func TestWorkflowReadRoutesAnswerTheStoredRecordOrAClearError(t *testing.T) {
	dir := t.TempDir()
	manifest := writeManifest(t, dir, `{"turns": []}`, "", false)
	f, _ := os.OpenFile(manifest, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprint(f, dagWorkflows)
	f.Close()
	_, ts := serveHost(t, manifest, "tok")
	get := func(path string) (int, string) {
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		path string
		code int
		body string
	}{
		{"/v1/workflows", 200, `"depends_on":["double"]`},
		{"/v1/workflows", 200, `"name":"pipe","description":"double each, sum them in a sub-workflow, shout only when asked","inputs":{"required":["xs"],"type":"object"}`},
		{"/v1/workflows/pipe/runs", 200, `[]`},
		{"/v1/workflows/ghost/runs", 404, `no workflow \"ghost\"`},
		{"/v1/workflows/pipe/runs?limit=0", 400, "limit must be"},
		{"/v1/workflows/pipe/runs?limit=99999999999999999999", 400, "limit must be"},
		{"/v1/workflows/pipe/runs/nope", 404, `workflow pipe has no run \"nope\"`},
	} {
		code, body := get(c.path)
		if code != c.code || !strings.Contains(body, c.body) {
			t.Errorf("GET %s = %d %s, want %d containing %s", c.path, code, body, c.code, c.body)
		}
	}
	req, _ := http.NewRequest("GET", ts.URL+"/v1/workflows", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without the token: %v %v", resp, err)
	}
}
