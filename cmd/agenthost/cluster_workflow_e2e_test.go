package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// A workflow run over HTTP on a two-node cluster is a River job: node A accepts it and
// streams its steps from the stored record, worker B runs it and is SIGKILLed in the
// middle of the second step; another worker resumes the run from its record, so the
// first step (whose end was stored) does not run again, and the client sees one run
// that completes.
func TestE2E_WorkflowOnAClusterSurvivesItsWorker(t *testing.T) {
	var hitsA, hitsB atomic.Int32
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hitsA.Add(1)
		fmt.Fprint(w, "one")
	}))
	defer first.Close()
	second := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hitsB.Add(1) == 1 { // the first call hangs until its worker dies
			<-r.Context().Done()
			return
		}
		fmt.Fprint(w, "two")
	}))
	defer second.Close()
	e := clusterEnv(t, "", [2]string{"scripted", `{"turns": []}`})
	f, _ := os.OpenFile(e.manifest, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, `
[workflows.fetch2]
[[workflows.fetch2.steps]]
id = "a"
tool = "http_get"
arguments = { url = %q }
[[workflows.fetch2.steps]]
id = "b"
tool = "http_get"
depends_on = ["a"]
arguments = { url = %q }
output = "second"
`, first.URL, second.URL)
	f.Close()
	a := e.serve(t, "--workers", "0")
	b := e.serve(t, "--workers", "1")

	run := startSSE(t, post(t, a.base+"/v1/workflows/fetch2/runs", `{"runId":"wk1"}`))
	deadline := time.Now().Add(readyBound)
	for hitsB.Load() == 0 { // step b is in flight on B
		if time.Now().After(deadline) {
			t.Fatalf("step b never started; events %v", types(run.all))
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.cmd.Process.Signal(syscall.SIGKILL)
	<-b.done
	e.startWorker(t, "--rescue-after", "2s")
	fin := run.until(t, "RUN_FINISHED")
	res, _ := fin["result"].(map[string]any)
	out, _ := res["output"].(map[string]any)
	if res["status"] != "completed" || !strings.Contains(fmt.Sprint(out["second"]), "two") {
		t.Fatalf("the run after the rescue: %v\nevents %v", fin, types(run.all))
	}
	if hitsA.Load() != 1 || hitsB.Load() != 2 {
		t.Fatalf("calls: a %d (want 1: its end was stored), b %d (want 2: cut short, then again)", hitsA.Load(), hitsB.Load())
	}
	finished := map[string]int{}
	for _, ev := range run.all {
		if ev["type"] == "STEP_FINISHED" {
			finished[fmt.Sprint(ev["stepName"])]++
		}
	}
	if finished["a"] != 1 || finished["b"] != 1 || strings.Count(strings.Join(types(run.all), " "), "RUN_STARTED") != 1 {
		t.Fatalf("the client saw %v: %v", finished, types(run.all))
	}
	// The run is over: the same run id again is the stored result, not a new run.
	again := startSSE(t, post(t, a.base+"/v1/workflows/fetch2/runs", `{"runId":"wk1"}`))
	if fin := again.until(t, "RUN_FINISHED"); fin["result"].(map[string]any)["status"] != "completed" || hitsA.Load() != 1 || hitsB.Load() != 2 {
		t.Fatalf("again: %v (calls a %d, b %d)", fin, hitsA.Load(), hitsB.Load())
	}
}
