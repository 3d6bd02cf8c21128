package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// planEnv writes a plan-mode manifest: calc, and the extra plugins and [agent.plan]
// lines given, on the scripted providers given (the first is the agent's).
func planEnv(t *testing.T, plan, plugins string, scripts ...[2]string) *agentEnv {
	t.Helper()
	build := exec.Command("bash", "scripts/plugins.d/examples.sh", "calc", "checklist", "strict_evaluator", "http_get")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build examples: %v\n%s", err, out)
	}
	e := newEnv(t, "mode = \"plan\"\n[agent.plan]\n"+plan, "", scripts...)
	f, err := os.OpenFile(e.manifest, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(f, "\n"+plugins)
	f.Close()
	return e
}

func examplePlugin(name, kind, extra string) string {
	return fmt.Sprintf("[[plugins]]\nname = %q\nkind = %q\nwasm = %q\n%s\n", name, kind,
		filepath.Join(repoRoot, "plugins/examples/go", name, name+".wasm"), extra)
}

// planTrace renders the plan-mode events of a run.
func planTrace(evs []loop.Event) []string {
	var out []string
	for _, e := range evs {
		switch d := e.Data.(type) {
		case *loop.PlanData:
			var ids []string
			for _, s := range d.Plan.Steps {
				ids = append(ids, s.ID)
			}
			out = append(out, fmt.Sprintf("plan %d [%s]", d.Revision, strings.Join(ids, " ")))
		case *loop.PlanStepData:
			if d.Status != "running" {
				out = append(out, fmt.Sprintf("step %s %s: %s", d.ID, d.Status, d.Outcome))
			}
		case *loop.EvaluationData:
			out = append(out, "evaluation "+d.Verdict+": "+d.Reason)
		case *loop.RunFinishedData:
			out = append(out, fmt.Sprintf("%s/%s", d.Status, d.Reason))
		}
	}
	return out
}

func plan(steps ...string) string {
	return fmt.Sprintf(`{"text": %q}`, `{"goal":"g","steps":[`+strings.Join(steps, ",")+`]}`)
}

func calcStep(id, expr string) string {
	return fmt.Sprintf(`{"id":%q,"description":"compute","tool":"calc","arguments":{"expression":%q},"expected_outcome":"a number"}`, id, expr)
}

func evaluation(verdict, reason, answer string) string {
	b, _ := json.Marshal(map[string]string{"verdict": verdict, "reason": reason, "answer": answer})
	return fmt.Sprintf(`{"text": %q}`, string(b))
}

// Seed 004 through the binary: the model plans three steps, the second fails, the model
// evaluator asks for a replan, and the second revision completes; the run's metrics
// count it all; the stored session replays the same events.
func TestE2E_PlanStepFailsReplanCompletes(t *testing.T) {
	e := planEnv(t, "max_replans = 2", "", [2]string{"scripted", `{"turns": [` + strings.Join([]string{
		plan(calcStep("1", "6*7"), calcStep("2", "6*"), calcStep("3", "1+1")),
		evaluation("replan", "step 2 failed", ""),
		plan(calcStep("2b", "6*8")),
		evaluation("done", "both computed", "42 and 48"),
	}, ",") + `]}`})
	code, evs, stderr := e.runJSON(t, "compute 6*7 and 6*8")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	trace := planTrace(evs)
	if len(trace) != 9 || !strings.HasPrefix(trace[2], "step 2 error: ") {
		t.Fatalf("trace %q", trace)
	}
	trace[2] = "step 2 error: …"
	equalStrings(t, "plan trace", trace, []string{
		"plan 1 [1 2 3]", "step 1 ok: 42", "step 2 error: …", "evaluation replan: step 2 failed", "step 3 skipped: ",
		"plan 2 [2b]", "step 2b ok: 48", "evaluation done: both computed", "completed/end_turn"})
	fin := evs[len(evs)-1].Data.(*loop.RunFinishedData)
	if m := fin.Metrics; m.Steps != 3 || m.Replans != 1 || m.ToolCalls != 3 || m.ToolErrors != 1 || m.ModelCalls != 4 {
		t.Fatalf("metrics %+v", fin.Metrics)
	}
	replaysTheSame(t, e, evs)
}

// A plan that keeps failing ends incomplete/max_replans (exit 1) with a report.
func TestE2E_PlanExhaustsMaxReplans(t *testing.T) {
	e := planEnv(t, "max_replans = 1", "", [2]string{"scripted", `{"turns": [` + strings.Join([]string{
		plan(calcStep("1", "1/")), evaluation("replan", "broken", ""),
		plan(calcStep("1", "2/")), evaluation("replan", "still broken", ""),
	}, ",") + `]}`})
	code, evs, _ := e.runJSON(t, "divide")
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	trace := planTrace(evs)
	if got := trace[len(trace)-1]; got != "incomplete/max_replans" {
		t.Fatalf("ended %s", got)
	}
	var final string
	for _, ev := range evs {
		if d, ok := ev.Data.(*loop.FinalData); ok {
			final = d.Text
		}
	}
	if !strings.HasPrefix(final, `The plan for "divide" did not finish: the evaluator asked for a replan after 1 (max_replans): still broken.`) {
		t.Fatalf("final %q", final)
	}
	replaysTheSame(t, e, evs)
}

// Wasm planner and evaluator decide (no model call at all): the checklist plans a calc
// step per part of the goal; the strict evaluator finishes a clean plan and, with a
// failing part, replans once and then fails the run.
func TestE2E_WasmPlannerAndEvaluatorDecide(t *testing.T) {
	e := planEnv(t, "planner = \"checklist\"\nevaluator = \"strict\"",
		examplePlugin("checklist", "planner", "")+examplePlugin("strict_evaluator", "evaluator", "[plugins.permissions]\nconfig = { max_revision = \"2\" }"),
		[2]string{"scripted", `{"turns": []}`})
	// The evaluator's table is named after its directory; the manifest calls it strict.
	b, _ := os.ReadFile(e.manifest)
	os.WriteFile(e.manifest, []byte(strings.Replace(string(b), `name = "strict_evaluator"`, `name = "strict"`, 1)), 0o644)

	code, evs, stderr := e.runJSON(t, "6*7; 1+1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	equalStrings(t, "clean plan", planTrace(evs), []string{
		"plan 1 [1 2]", "step 1 ok: 42", "step 2 ok: 2", "evaluation done: every step succeeded", "completed/end_turn"})

	code, evs, _ = e.runJSON(t, "6*7; 1+")
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	trace := planTrace(evs)
	want := []string{"plan 1 [1 2]", "step 1 ok: 42", "step 2 error", "evaluation replan: step 2 failed",
		"plan 2 [2.r2]", "step 2.r2 error", "evaluation fail: revision 2 still fails: step 2.r2 failed", "failed/plan_failed"}
	if len(trace) != len(want) {
		t.Fatalf("trace %q", trace)
	}
	for i := range want {
		if !strings.HasPrefix(trace[i], want[i]) {
			t.Fatalf("trace[%d] = %q, want prefix %q\n%q", i, trace[i], want[i], trace)
		}
	}
	replaysTheSame(t, e, evs)
}

// A SIGKILL in the middle of a plan: the next run on the session (no prompt) resumes
// it without planning again or re-running the finished step.
func TestE2E_PlanResumesAfterSIGKILL(t *testing.T) {
	var hits atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			select { // the first GET hangs until the process that made it is killed
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		fmt.Fprint(w, "fetched")
	}))
	defer srv.Close()
	defer close(release)
	getStep := fmt.Sprintf(`{"id":"2","description":"fetch","tool":"http_get","arguments":{"url":%q},"expected_outcome":"a body"}`, srv.URL)
	e := planEnv(t, "", examplePlugin("http_get", "tool", "[plugins.permissions]\nallowed_hosts = [\"127.0.0.1\"]\ntimeout = \"60s\""),
		[2]string{"scripted", `{"turns": [` + plan(calcStep("1", "6*7"), getStep) + `]}`},
		[2]string{"resumed", `{"turns": [` + evaluation("done", "fetched", "") + `]}`})

	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", e.manifest, "run", "--json", "compute, then fetch")
	cmd.Dir = e.dir
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	session := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var ev loop.Event
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				if d, ok := ev.Data.(*loop.PlanStepData); ok && d.ID == "2" && d.Status == "running" {
					session <- ev.SessionID
					return
				}
			}
		}
		session <- ""
	}()
	var sid string
	select {
	case sid = <-session:
	case <-time.After(readyBound): // a hang guard
		t.Fatal("the plan never reached step 2")
	}
	for hits.Load() == 0 { // step 2's GET is in flight
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	code, evs, stderr := e.runJSON(t, "--session", sid, "--provider", "resumed")
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
	equalStrings(t, "resumed", planTrace(evs), []string{"step 2 ok: fetched", "evaluation done: fetched", "completed/end_turn"})
	for _, ev := range evs {
		if d, ok := ev.Data.(*loop.ToolCallData); ok && d.Name == "calc" {
			t.Fatalf("the finished step ran again: %+v", d)
		}
	}
	if hits.Load() != 2 {
		t.Fatalf("the cut step's GET was made %d times, want 2 (cut, then again)", hits.Load())
	}
}
