package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/workflow"
)

// userHarness: a user (who may not read the stored runs) starts ship from the form with
// a note the schema refuses (the refusal is shown), then with a valid one; approves it
// from the card drawn from the run's own stream, and reports both states.
const userHarness = `<!doctype html><html><body style="margin:0">
<iframe id="f" style="border:0;width:1280px;height:800px"></iframe>
<script>
const f = document.getElementById("f");
f.src = "/" + location.hash;
const report = (stage, v) => fetch("/harness-result", { method: "POST", body: stage + "\n" + JSON.stringify(v) });
function waitFor(cond, then) { const t = () => { let ok = false; try { ok = cond(); } catch (e) {} ok ? then() : setTimeout(t, 50); }; t(); }
f.onload = () => {
  const d = f.contentDocument, $ = (id) => d.getElementById(id), B = d.body.dataset;
  const nodes = () => [...d.querySelectorAll(".wf-node")].map((n) => n.dataset.step + "=" + n.dataset.status).sort();
  waitFor(() => B.workflow === "ship/", () => {
    $("wf-start").click();
    const form = d.querySelector("form.wf-start");
    form.querySelector("[name=a]").value = "1"; form.querySelector("[name=b]").value = "2";
    form.querySelector("[name=note]").value = "a note far longer than twenty characters";
    d.querySelector(".wf-go").click();
    waitFor(() => B.wfState === "error" && d.querySelector(".wf-error"), () => {
    const refused = d.querySelector(".wf-error").textContent;
    form.querySelector("[name=note]").value = "short";
    d.querySelector(".wf-go").click();
    waitFor(() => B.wfState === "interrupted" && d.querySelector(".wf-approve"), () => {
      report("waiting", { refused, run: B.workflow.split("/")[1], nodes: nodes(), question: d.querySelector(".wf-question").textContent });
      d.querySelector(".wf-approve").click();
      waitFor(() => B.wfState === "completed", () => report("approved", { nodes: nodes() }));
    });
    });
  });
};
</script></body></html>`

// A user, who may not read the stored runs (GET …/runs is for operators), still starts a
// workflow from the console and approves its waiting step: the DAG and the approval are
// drawn from the run's own stream, and the run, stored under the user's id, completes.
// Inputs the workflow's schema refuses are refused with the server's reason shown.
func TestConsoleUserApprovesTheirOwnWorkflowRunFromItsStream(t *testing.T) {
	dir := t.TempDir()
	manifest := writeManifest(t, dir, `{"turns": []}`, "", false)
	f, _ := os.OpenFile(manifest, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprint(f, shipWorkflow)
	f.Close()
	h, err := host.Open(context.Background(), host.Options{Manifest: manifest, Approver: InterruptApprover{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	ana := access.Principal{ID: "u-ana", Name: "ana", Role: access.RoleUser}
	srv, err := New(Options{Agent: h.Agent, Store: h.Store, Token: "tok",
		Verify: func(_ context.Context, tok string) (access.Principal, error) {
			if tok != "ana.user.token" {
				return access.Principal{}, errors.New("unknown token")
			}
			return ana, nil
		},
		Workflows: &Workflows{Find: h.Manifest.Workflow, List: h.Manifest.WorkflowNames, Engine: h.Workflows()}})
	if err != nil {
		t.Fatal(err)
	}
	ts, results := serveHarness(t, srv, "/user-harness", userHarness, 2)
	proc := startChromium(t, ts.URL+"/user-harness#token=ana.user.token&workflow=ship")
	var w struct {
		Refused, Run, Question string
		Nodes                  []string
	}
	shipStage(t, results, "waiting", &w)
	if !strings.HasPrefix(w.Refused, "400 ") || !strings.Contains(w.Refused, "note") {
		t.Errorf("inputs the schema refuses: the console shows %q", w.Refused)
	}
	if w.Question != "Publish the total 5?" || strings.Join(w.Nodes, " ") != "alert=skipped check=ok collect=ok double=ok publish=waiting published=pending report=ok" {
		t.Errorf("waiting: %+v", w)
	}
	var a struct{ Nodes []string }
	shipStage(t, results, "approved", &a)
	if strings.Join(a.Nodes, " ") != "alert=skipped check=ok collect=ok double=ok publish=ok published=ok report=ok" {
		t.Errorf("approved: %v", a.Nodes)
	}
	stopChromium(proc)
	rec, ok, err := workflow.LoadOwnedRecord(context.Background(), h.Workflows().Store, "ship", ana.ID, w.Run)
	if err != nil || !ok || rec.Status != workflow.RunCompleted || rec.Steps["published"].Status != workflow.StatusOK {
		t.Fatalf("ana's run: %v %v %+v", ok, err, rec)
	}
}
