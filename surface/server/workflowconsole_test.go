package server

import (
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/workflow"
)

// shipWorkflow has six columns, a long edge (collect → report, declared, past double and
// check: drawn straight it would cross both boxes), a branch that runs only for large
// totals (alert) and an approval before the last step.
const shipWorkflow = `
[workflows.ship]
description = "add two figures, double and check the total, ask before publishing"
inputs = { type = "object", required = ["a", "b"], properties = { a = { type = "number", title = "First figure" }, b = { type = "number", title = "Second figure" }, note = { type = "string", maxLength = 20 } } }
[[workflows.ship.steps]]
id = "collect"
tool = "calc"
arguments = { expression = "${string(inputs.a)} + ${string(inputs.b)}" }
[[workflows.ship.steps]]
id = "double"
tool = "calc"
arguments = { expression = "${string(steps.collect.output)} * 2" }
[[workflows.ship.steps]]
id = "check"
tool = "calc"
arguments = { expression = "${string(steps.double.output)} - 1" }
[[workflows.ship.steps]]
id = "report"
tool = "calc"
depends_on = ["collect"]
arguments = { expression = "${string(steps.check.output)} + 0" }
output = "total"
[[workflows.ship.steps]]
id = "alert"
tool = "calc"
if = "steps.report.output > 1000.0"
arguments = { expression = "${string(steps.report.output)} - 1000" }
[[workflows.ship.steps]]
id = "publish"
approval = "Publish the total ${string(steps.report.output)}?"
[[workflows.ship.steps]]
id = "published"
tool = "calc"
depends_on = ["publish"]
arguments = { expression = "${string(steps.report.output)} * 1" }
output = "published"
`

// shipHarness frames the console at 1280×800. It runs a chat, then in the Workflows
// panel opens the start form, fills it and starts a run, watching the DAG's boxes as
// they change; when the run waits for approval it measures the drawing (boxes inside
// the canvas and the window, no edge through a box), tries zoom and fit, reads the
// approval card and the sidebar, and reports "waiting". It clicks Approve, opens the
// last step's transcript and reports "approved"; then starts a second run, rejects it
// and reports "rejected". Each report is "STAGE\n" + JSON, posted to /harness-result.
const shipHarness = `<!doctype html><html><body style="margin:0">
<iframe id="f" style="border:0;width:1280px;height:800px"></iframe>
<script>
` + dagGeometryJS + `
const f = document.getElementById("f");
f.src = "/" + location.hash;
const report = (stage, v) => fetch("/harness-result", { method: "POST", body: stage + "\n" + JSON.stringify(v) });
function waitFor(cond, then) { const t = () => { let ok = false; try { ok = cond(); } catch (e) {} ok ? then() : setTimeout(t, 50); }; t(); }
f.onload = () => {
  const d = f.contentDocument, $ = (id) => d.getElementById(id), B = d.body.dataset;
  const nodes = () => [...d.querySelectorAll(".wf-node")].map((n) => n.dataset.step + "=" + n.dataset.status).sort();
  const seen = new Set();
  new MutationObserver((ms) => { for (const m of ms) for (const a of m.addedNodes) if (a.querySelectorAll) for (const n of a.querySelectorAll(".wf-node")) seen.add(n.dataset.step + "=" + n.dataset.status); })
    .observe($("wf-box"), { childList: true, subtree: true });
  const start = (a, b, note, then) => {
    $("wf-start").click();
    const form = d.querySelector("form.wf-start");
    const labels = [...form.querySelectorAll("label")].map((l) => l.textContent.trim() + ":" + l.querySelector("input,select").type + (l.querySelector("input,select").required ? ":required" : ""));
    form.querySelector("[name=a]").value = a; form.querySelector("[name=b]").value = b; form.querySelector("[name=note]").value = note;
    seen.clear();
    d.querySelector(".wf-go").click();
    waitFor(() => B.wfState === "interrupted" && d.querySelector(".wf-approval"), () => then(labels));
  };
  waitFor(() => $("sessions").children.length > 0 && $("plugins").children.length > 0, () => {
    $("send").click();
    waitFor(() => Number(B.runs || 0) >= 1, () => {
      $("show-workflows").click();
      waitFor(() => B.workflow === "ship/", () => start("3", "4", "first", (labels) => {
        const run = B.workflow.split("/")[1];
        waitFor(() => d.querySelector('li.wf-run-group[data-run$=":' + run + '"] li.session'), () => {
          const geo = geometry(d, f.contentWindow);
          const fit = $("wf-box").dataset.zoom;
          $("wf-zoom-in").click(); const zoomed = $("wf-box").dataset.zoom;
          $("wf-fit").click(); const refit = $("wf-box").dataset.zoom;
          const card = d.querySelector(".wf-approval");
          report("waiting", { labels, run, seen: [...seen].sort(), nodes: nodes(), geo, fit, zoomed, refit,
            question: card.querySelector(".wf-question").textContent, card: card.textContent,
            buttons: [...card.querySelectorAll("button")].map((b) => b.className + ":" + b.textContent),
            chats: [...d.querySelectorAll("#sessions > li.session")].map((l) => l.dataset.id),
            groups: [...d.querySelectorAll("#sessions > li.wf-run-group")].map((g) => g.dataset.run + "=" + [...g.querySelectorAll("li.session")].map((l) => l.dataset.id).join(",")) });
          d.querySelector(".wf-approve").click();
          waitFor(() => B.wfState === "completed" && B.workflow === "ship/" + run, () => {
            const done = nodes();
            d.querySelector('.wf-node[data-step="published"]').dispatchEvent(new MouseEvent("click", { bubbles: true }));
            const detail = $("wf-detail").textContent;
            d.querySelector(".wf-session").click();
            waitFor(() => $("thread").textContent.endsWith("~published") && d.querySelector(".tool-card .result"), () => {
              report("approved", { nodes: done, detail, thread: $("thread").textContent, transcript: $("conversation").textContent, panelHidden: $("workflows").hidden });
              $("show-workflows").click();
              waitFor(() => B.workflow === "ship/", () => start("600", "1", "second", () => {
                const run2 = B.workflow.split("/")[1];
                const waiting = nodes();
                d.querySelector(".wf-comment").value = "not this one";
                d.querySelector(".wf-reject").click();
                waitFor(() => B.wfState === "completed" && B.workflow === "ship/" + run2, () => {
                  d.querySelector('.wf-node[data-step="publish"]').dispatchEvent(new MouseEvent("click", { bubbles: true }));
                  report("rejected", { run: run2, waiting, nodes: nodes(), detail: $("wf-detail").textContent, geo: geometry(d, f.contentWindow) });
                });
              }));
            });
          });
        });
      }));
    });
  });
};
</script></body></html>`

// dagGeometryJS measures the DAG drawn in document d (window win): boxes outside the
// canvas or the window, and edges through a box (each edge sampled every pixel of its
// length, in the page's coordinates, against every box less a 1 px border).
const dagGeometryJS = `function geometry(d, win) {
  const $ = (id) => d.getElementById(id);
  const box = $("wf-box").getBoundingClientRect(), W = win.innerWidth, H = win.innerHeight;
  const rects = [...d.querySelectorAll(".wf-node rect")].map((r) => ({ id: r.parentNode.dataset.step, b: r.getBoundingClientRect() }));
  const outside = rects.filter(({ b }) => b.left < box.left || b.right > box.right || b.top < box.top || b.bottom > box.bottom || b.left < 0 || b.top < 0 || b.right > W || b.bottom > H).map((r) => r.id);
  const hits = new Set();
  for (const p of d.querySelectorAll(".wf-edge")) {
    const m = p.getScreenCTM(), len = p.getTotalLength();
    for (let s = 0; s <= len; s += 1) {
      const q = p.getPointAtLength(s), x = m.a * q.x + m.c * q.y + m.e, y = m.b * q.x + m.d * q.y + m.f;
      for (const { id, b } of rects) if (x > b.left + 1 && x < b.right - 1 && y > b.top + 1 && y < b.bottom - 1) hits.add(p.dataset.from + ">" + p.dataset.to + " through " + id);
    }
  }
  const widths = rects.map(({ b }) => b.width);
  return { window: [W, H], canvas: [box.width, box.height], outside, hits: [...hits], boxes: rects.length, edges: d.querySelectorAll(".wf-edge").length, boxWidth: Math.min(...widths), zoom: $("wf-box").dataset.zoom };
}
`

type shipGeometry struct {
	Window, Canvas []float64
	Outside, Hits  []string
	Boxes, Edges   int
	BoxWidth       float64
	Zoom           string
}

// checkGeometry asserts the drawing fits: every box inside the canvas and the 1280×800
// window, no edge through a box, every box and edge drawn, boxes legible.
func checkGeometry(t *testing.T, stage string, g shipGeometry) {
	t.Helper()
	if len(g.Window) != 2 || g.Window[0] != 1280 || g.Window[1] != 800 {
		t.Fatalf("%s: the frame is %v, want 1280×800", stage, g.Window)
	}
	if len(g.Outside) > 0 || len(g.Hits) > 0 {
		t.Errorf("%s: boxes outside the canvas %v; edges through boxes %v", stage, g.Outside, g.Hits)
	}
	if g.Boxes != 7 || g.Edges != 8 {
		t.Errorf("%s: %d boxes and %d edges drawn, want 7 and 8 (report → published is implied by its arguments)", stage, g.Boxes, g.Edges)
	}
	// The DAG uses the page: the canvas takes most of the panel, not a strip.
	if g.Canvas[0] < 900 || g.Canvas[1] < 300 || g.BoxWidth < 100 {
		t.Errorf("%s: canvas %v, narrowest box %.0f px", stage, g.Canvas, g.BoxWidth)
	}
}

// screenshotsDir is where the console tests leave screenshots for a reviewer:
// testdata/screenshots (gitignored), or $AGENTHOST_ARTIFACTS when set.
func screenshotsDir(t *testing.T) string {
	dir := os.Getenv("AGENTHOST_ARTIFACTS")
	if dir == "" {
		dir, _ = filepath.Abs(filepath.Join("testdata", "screenshots"))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The console starts a workflow from a form drawn from its inputs schema, shows its
// steps as they run, and stops at the approval with the question, what it is based on
// and Approve / Reject; Approve completes the run (the last step runs, its transcript
// opens), Reject refuses it (the step is rejected, the one after it never runs). The
// DAG fills the page at 1280×800 with no box cut off and no edge through a box, and
// the runs' step sessions are grouped under their run in the sidebar, apart from the
// chat. Checked in Chromium against the store; screenshots are written for a reviewer.
func TestConsoleStartsAWorkflowAndApprovesOrRejectsItsWaitingStep(t *testing.T) {
	dir := t.TempDir()
	manifest := writeManifest(t, dir, `{"turns": [{"text": "hello from the model"}]}`, "", false)
	f, _ := os.OpenFile(manifest, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprint(f, shipWorkflow)
	f.Close()
	h, err := host.Open(context.Background(), host.Options{Manifest: manifest, Approver: InterruptApprover{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	srv, err := New(Options{Agent: h.Agent, Store: h.Store, Token: "tok", Plugins: func() any { return h.PluginInfo() },
		Workflows: &Workflows{Find: h.Manifest.Workflow, List: h.Manifest.WorkflowNames, Engine: h.Workflows()}})
	if err != nil {
		t.Fatal(err)
	}
	ts, results := serveHarness(t, srv, "/ship-harness", shipHarness, 4)
	proc := startChromium(t, ts.URL+"/ship-harness#token=tok&session=chat-1&prompt=hello")

	var w struct {
		Labels, Seen, Nodes, Buttons, Chats, Groups []string
		Run, Question, Card, Fit, Zoomed, Refit     string
		Geo                                         shipGeometry
	}
	shipStage(t, results, "waiting", &w)
	if strings.Join(w.Labels, " | ") != "First figure *:number:required | Second figure *:number:required | note:text" {
		t.Errorf("start form fields: %q", w.Labels)
	}
	for _, s := range []string{"collect=running", "collect=ok", "report=ok", "publish=waiting"} {
		if !contains(w.Seen, s) {
			t.Errorf("the DAG never showed %s while the run streamed: %v", s, w.Seen)
		}
	}
	wantNodes := "alert=skipped check=ok collect=ok double=ok publish=waiting published=pending report=ok"
	if strings.Join(w.Nodes, " ") != wantNodes {
		t.Errorf("waiting: nodes %v, want %s", w.Nodes, wantNodes)
	}
	if w.Question != "Publish the total 13?" || !strings.Contains(w.Card, "Based onreport13") ||
		!strings.Contains(w.Card, "Approving runs next: published (tool calc)") || strings.Contains(w.Card, "{") {
		t.Errorf("approval card: question %q, card %q", w.Question, w.Card)
	}
	if strings.Join(w.Buttons, ",") != "primary wf-approve:Approve,wf-reject:Reject" {
		t.Errorf("approval buttons: %v", w.Buttons)
	}
	checkGeometry(t, "waiting", w.Geo)
	if !(w.Zoomed > w.Fit) || w.Refit != w.Fit {
		t.Errorf("zoom: fitted %s, zoomed in %s, fitted again %s", w.Fit, w.Zoomed, w.Refit)
	}
	// The sidebar: the chat alone among the chats; the run's step sessions under the run.
	if strings.Join(w.Chats, ",") != "chat-1" {
		t.Errorf("chats listed: %v", w.Chats)
	}
	runKey := workflow.RunSession("ship", "", w.Run)
	wantGroup := runKey + "=" + strings.Join([]string{runKey + "~check", runKey + "~collect", runKey + "~double", runKey + "~report"}, ",")
	if len(w.Groups) != 1 || sortedGroup(w.Groups[0]) != wantGroup {
		t.Errorf("workflow groups %v, want %s", w.Groups, wantGroup)
	}

	var a struct {
		Nodes                      []string
		Detail, Thread, Transcript string
		PanelHidden                bool
	}
	shipStage(t, results, "approved", &a)
	if strings.Join(a.Nodes, " ") != "alert=skipped check=ok collect=ok double=ok publish=ok published=ok report=ok" {
		t.Errorf("approved: nodes %v", a.Nodes)
	}
	if !strings.HasPrefix(a.Detail, "published tool calc ok") || !strings.Contains(a.Detail, "output 13") {
		t.Errorf("approved: the last step's detail %q", a.Detail)
	}
	if a.Thread != runKey+"~published" || !strings.Contains(a.Transcript, "calc") || !a.PanelHidden {
		t.Errorf("the step's transcript: thread %q, shows %q, panel hidden %v", a.Thread, a.Transcript, a.PanelHidden)
	}

	var r struct {
		Run, Detail    string
		Waiting, Nodes []string
		Geo            shipGeometry
	}
	shipStage(t, results, "rejected", &r)
	if strings.Join(r.Nodes, " ") != "alert=ok check=ok collect=ok double=ok publish=rejected published=skipped report=ok" {
		t.Errorf("rejected: nodes %v", r.Nodes)
	}
	if !strings.Contains(r.Detail, "approvedfalse") || !strings.Contains(r.Detail, "commentnot this one") {
		t.Errorf("rejected: the approval step's detail %q", r.Detail)
	}
	checkGeometry(t, "rejected", r.Geo)
	stopChromium(proc)

	// The store agrees: the approved run completed and published; the rejected one never ran its last step.
	ctx := context.Background()
	st := h.Workflows().Store
	rec1, ok1, err1 := workflow.LoadOwnedRecord(ctx, st, "ship", "", w.Run)
	rec2, ok2, err2 := workflow.LoadOwnedRecord(ctx, st, "ship", "", r.Run)
	if !ok1 || !ok2 || err1 != nil || err2 != nil {
		t.Fatalf("records: %v %v %v %v", ok1, err1, ok2, err2)
	}
	if rec1.Status != workflow.RunCompleted || rec1.Steps["published"].Status != workflow.StatusOK || fmt.Sprint(rec1.Outputs["published"]) != "13" {
		t.Errorf("approved run: %s %+v %v", rec1.Status, rec1.Steps["published"], rec1.Outputs)
	}
	if rec2.Steps["publish"].Status != workflow.StatusRejected || rec2.Steps["published"].Status != workflow.StatusSkipped {
		t.Errorf("rejected run: publish %+v, published %+v", rec2.Steps["publish"], rec2.Steps["published"])
	}
	if es, err := h.Store.Load(ctx, workflow.StepSession("ship", "", r.Run, "published", -1)); err != nil || len(es) != 0 {
		t.Errorf("the rejected run's last step ran: %d entries, %v", len(es), err)
	}

	// Screenshots at 1280×800: the start form, a run waiting for approval, an approved
	// run and a rejected one (the sidebar shows the chat and the grouped runs).
	if _, err := h.Workflows().Run(ctx, mustWorkflow(t, h, "ship"), workflow.RunInput{RunID: "wf-shot", Inputs: json.RawMessage(`{"a":20,"b":22}`)}, nil); err != nil {
		t.Fatal(err)
	}
	shots := screenshotsDir(t)
	for name, frag := range map[string]string{
		"workflow-start-form.png": "workflow=ship&wfstart=1",
		"workflow-approval.png":   "workflow=ship&wfrun=wf-shot",
		"workflow-approved.png":   "workflow=ship&wfrun=" + w.Run + "&wfstep=published",
		"workflow-rejected.png":   "workflow=ship&wfrun=" + r.Run + "&wfstep=publish",
	} {
		shot := filepath.Join(shots, name)
		chromium(t, "--screenshot="+shot, "--window-size=1280,800", ts.URL+"/#token=tok&"+frag)
		f, err := os.Open(shot)
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil || cfg.Width != 1280 || cfg.Height != 800 {
			t.Fatalf("screenshot %s: %+v %v", name, cfg, err)
		}
		t.Logf("screenshot: %s", shot)
	}
}

func shipStage(t *testing.T, results <-chan string, name string, v any) {
	t.Helper()
	select {
	case res := <-results:
		got, body, _ := strings.Cut(res, "\n")
		if got != name {
			t.Fatalf("harness reported stage %q, want %q: %s", got, name, body)
		}
		if err := json.Unmarshal([]byte(body), v); err != nil {
			t.Fatalf("stage %s: %v in %s", name, err, body)
		}
	case <-time.After(120 * time.Second): // a hang guard, not a speed assertion
		t.Fatalf("the harness did not report stage %q", name)
	}
}

func mustWorkflow(t *testing.T, h *host.Host, name string) *workflow.Workflow {
	w, ok := h.Manifest.Workflow(name)
	if !ok {
		t.Fatalf("no workflow %s", name)
	}
	return w
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// sortedGroup sorts the session ids of one "RUN=ID,ID" group.
func sortedGroup(g string) string {
	k, ids, _ := strings.Cut(g, "=")
	xs := strings.Split(ids, ",")
	sort.Strings(xs)
	return k + "=" + strings.Join(xs, ",")
}
