package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
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

	"github.com/agenthost/agenthost/store/pgtest"
)

// clusterEnv is a manifest on a fresh PostgreSQL database with the scripted providers
// given (the first is the agent's) and calc (needing approval when approve is set) and
// http_get.
func clusterEnv(t *testing.T, policy string, scripts ...[2]string) *agentEnv {
	t.Helper()
	t.Setenv("AGENTHOST_TEST_PG", pgtest.Start(t).NewDatabase(t))
	build := exec.Command("bash", "scripts/plugins.d/examples.sh", "calc", "http_get")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build examples: %v\n%s", err, out)
	}
	e := newEnv(t, "", policy, scripts...)
	b, _ := os.ReadFile(e.manifest)
	m := strings.Replace(string(b), "kind = \"sqlite\"\npath = \"sessions.db\"", "kind = \"postgres\"\nurl = \"${AGENTHOST_TEST_PG}\"", 1)
	m += examplePlugin("http_get", "tool", "[plugins.permissions]\nallowed_hosts = [\"127.0.0.1\"]\ntimeout = \"60s\"")
	os.WriteFile(e.manifest, []byte(m), 0o644)
	return e
}

// sseRun reads a run's SSE stream in the background: every event, in order.
type sseRun struct {
	events chan map[string]any
	all    []map[string]any
}

func startSSE(t *testing.T, resp *http.Response) *sseRun {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("the run was not streamed: %d %s", resp.StatusCode, b)
	}
	r := &sseRun{events: make(chan map[string]any, 256)}
	go func() {
		defer close(r.events)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		id := ""
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
				id = v
			}
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var ev map[string]any
				if json.Unmarshal([]byte(data), &ev) == nil {
					ev["_id"] = id // the stored event's seq, for Last-Event-ID
					r.events <- ev
				}
			}
		}
	}()
	return r
}

// until reads events until one of type typ (a hang guard bounds the wait).
func (r *sseRun) until(t *testing.T, typ string) map[string]any {
	t.Helper()
	deadline := time.After(readyBound)
	for {
		select {
		case ev, ok := <-r.events:
			if !ok {
				b, _ := json.Marshal(r.all)
				t.Fatalf("the stream ended before %s; saw %s", typ, b)
			}
			r.all = append(r.all, ev)
			if ev["type"] == typ {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %s within the hang guard; saw %v", typ, types(r.all))
		}
	}
}

func types(evs []map[string]any) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev["type"].(string))
	}
	return out
}

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// Two serve nodes on one PostgreSQL: A only accepts (--workers 0), B executes. A run
// submitted to A runs on B and A streams its events; its approval is given on A; a run
// submitted to B runs there too; an abort sent to A stops a run executing on B.
func TestE2E_TwoNodesStreamApproveAndAbort(t *testing.T) {
	e := clusterEnv(t, `require_approval = ["calc"]`, [2]string{"scripted", `{"per_session": true, "turns": [
	  {"expect": {"contains": "6*7"}, "tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]},
	  {"expect": {"last_role": "tool"}, "text": "It is {{result c1}}."}]}`}, [2]string{"slow", `{"turns": [{"text": "too late", "delay_ms": 60000}]}`})
	a := e.serve(t, "--workers", "0")
	b := e.serve(t, "--workers", "2")

	run := startSSE(t, post(t, a.base+"/v1/runs", `{"threadId":"s1","runId":"r1","messages":[{"id":"u1","role":"user","content":"what is 6*7?"}]}`))
	fin := run.until(t, "RUN_FINISHED")
	if oc := fin["outcome"].(map[string]any); oc["type"] != "interrupt" {
		t.Fatalf("run 1 ended %v; events %v", fin, types(run.all))
	}
	if got := strings.Join(types(run.all), " "); !strings.HasPrefix(got, "RUN_STARTED") || !strings.Contains(got, "TOOL_CALL_START TOOL_CALL_ARGS TOOL_CALL_END") {
		t.Fatalf("A streamed %s", got)
	}
	// The node that executed the run logs its end, as a server does for its own runs.
	for deadline := time.Now().Add(readyBound); !strings.Contains(b.log(), `msg="run finished" session=s1 run=r1 status=interrupted`); {
		if time.Now().After(deadline) {
			t.Fatalf("worker B never logged the run's end:\n%s", b.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	run = startSSE(t, post(t, a.base+"/v1/runs", `{"threadId":"s1","runId":"r2","messages":[],"resume":[{"interruptId":"c1","status":"resolved","payload":{"approved":true}}]}`))
	fin = run.until(t, "RUN_FINISHED")
	if res := fin["result"].(map[string]any); res["status"] != "completed" || res["text"] != "It is 42." {
		t.Fatalf("resumed run: %v", fin)
	}
	// A client that lost the stream after the tool result picks it up on B with
	// Last-Event-ID: the rest of the run, the result not again.
	var lastID string
	for _, ev := range run.all {
		if ev["type"] == "TOOL_CALL_RESULT" {
			lastID = ev["_id"].(string)
		}
	}
	req, _ := http.NewRequest("GET", b.base+"/v1/sessions/s1/runs/r2/stream", nil)
	req.Header.Set("Last-Event-ID", lastID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 || lastID == "" {
		t.Fatalf("resume the stream after %q: %v %v", lastID, resp, err)
	}
	again := startSSE(t, resp)
	again.until(t, "RUN_FINISHED")
	if got := strings.Join(types(again.all), " "); strings.Contains(got, "TOOL_CALL_RESULT") || !strings.Contains(got, "TEXT_MESSAGE_CONTENT") {
		t.Fatalf("resumed stream after %s: %s", lastID, got)
	}
	run = startSSE(t, post(t, b.base+"/v1/runs", `{"threadId":"s2","runId":"r3","messages":[{"id":"u1","role":"user","content":"6*7 again"}]}`))
	if fin = run.until(t, "RUN_FINISHED"); fin["outcome"].(map[string]any)["type"] != "interrupt" {
		t.Fatalf("run on B: %v", fin)
	}

	// An abort sent to A reaches the run on B: the slow model never answers.
	b.cmd.Process.Signal(syscall.SIGTERM) // only the slow worker executes from here
	<-b.done
	e.startWorker(t, "--provider", "slow")
	run = startSSE(t, post(t, a.base+"/v1/runs", `{"threadId":"s3","runId":"r4","messages":[{"id":"u1","role":"user","content":"take your time"}]}`))
	run.until(t, "RUN_STARTED")
	resp = post(t, a.base+"/v1/runs/r4/abort", `{}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("abort on A: %d", resp.StatusCode)
	}
	fin = run.until(t, "RUN_FINISHED")
	if oc := fin["outcome"].(map[string]any); oc["type"] != "cancelled" {
		t.Fatalf("aborted run ended %v", fin)
	}
}

// A worker SIGKILLed mid-run: River hands the job to another worker, which continues
// the stored session; the tool call whose result was stored is not executed again, and
// the client streaming from the accepting node sees one run that completes.
func TestE2E_WorkerKilledMidRunCompletesElsewhere(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "fetched")
	}))
	defer srv.Close()
	args, _ := json.Marshal(map[string]string{"url": srv.URL})
	fixture, _ := json.Marshal(map[string]any{"turns": []any{
		map[string]any{"tool_calls": []any{map[string]string{"id": "g1", "name": "http_get", "arguments": string(args)}}},
		map[string]any{"expect": map[string]string{"last_role": "tool"}, "text": "never", "delay_ms": 60000},
	}})
	e := clusterEnv(t, "", [2]string{"scripted", string(fixture)},
		[2]string{"rescuer", `{"turns": [{"expect": {"last_role": "tool"}, "text": "Done after the rescue: {{result g1}}."}]}`})
	a := e.serve(t, "--workers", "0")
	b := e.serve(t, "--workers", "1")

	run := startSSE(t, post(t, a.base+"/v1/runs", `{"threadId":"k1","runId":"rk","messages":[{"id":"u1","role":"user","content":"fetch it"}]}`))
	run.until(t, "TOOL_CALL_RESULT") // stored on B, streamed by A
	b.cmd.Process.Signal(syscall.SIGKILL)
	<-b.done
	// Another worker, with a provider whose answer is the run's next one.
	e.startWorker(t, "--provider", "rescuer", "--rescue-after", "2s")
	fin := run.until(t, "RUN_FINISHED")
	if res := fin["result"].(map[string]any); res["status"] != "completed" || res["text"] != "Done after the rescue: fetched." {
		t.Fatalf("run after the rescue: %v\nevents %v", fin, types(run.all))
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want once", n)
	}
	if got := strings.Count(strings.Join(types(run.all), " "), "RUN_STARTED"); got != 1 {
		t.Fatalf("the client saw %d RUN_STARTED: %v", got, types(run.all))
	}
}

// startWorker starts `agenthost worker ARGS...` and waits until it works.
func (e *agentEnv) startWorker(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), append([]string{"-c", e.manifest, "worker"}, args...)...)
	cmd.Dir = e.dir
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "worker executing") {
				ready <- true
			}
			t.Log("worker: " + sc.Text())
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("the worker exited")
		}
	case <-time.After(readyBound):
		t.Fatal("the worker did not start")
	}
}

// Two runs on one session, sent to two nodes at once: both complete, one after the
// other (the session's lease; the second job waits), never overlapping.
func TestE2E_OneRunAtATimePerSessionAcrossNodes(t *testing.T) {
	e := clusterEnv(t, "", [2]string{"scripted", `{"per_session": true, "turns": [
	  {"text": "first", "delay_ms": 1500}, {"text": "second", "delay_ms": 1500}]}`})
	a := e.serve(t, "--workers", "2")
	b := e.serve(t, "--workers", "2")
	one := startSSE(t, post(t, a.base+"/v1/runs", `{"threadId":"shared","runId":"p1","messages":[{"id":"u1","role":"user","content":"one"}]}`))
	two := startSSE(t, post(t, b.base+"/v1/runs", `{"threadId":"shared","runId":"p2","messages":[{"id":"u2","role":"user","content":"two"}]}`))
	for _, r := range []*sseRun{one, two} {
		if fin := r.until(t, "RUN_FINISHED"); fin["result"].(map[string]any)["status"] != "completed" {
			t.Fatalf("run ended %v", fin)
		}
	}
	resp, err := http.Get(a.base + "/v1/sessions/shared")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var detail struct {
		Runs []struct {
			ID             string
			Started, Ended time.Time
		} `json:"runs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&detail); err != nil || len(detail.Runs) != 2 {
		t.Fatalf("runs %+v %v", detail.Runs, err)
	}
	x, y := detail.Runs[0], detail.Runs[1]
	if y.Started.Before(x.Ended) {
		t.Fatalf("the runs overlapped: %s %s–%s, %s %s–%s", x.ID, x.Started, x.Ended, y.ID, y.Started, y.Ended)
	}
}

// A run id the session has used is refused (409) before a job is queued, on any node; a
// queued run its worker refuses before it starts (an unknown agent) ends the stream with a
// RUN_ERROR instead of leaving the client waiting.
func TestE2E_ClusterRefusesReusedRunIDAndEndsUnstartedRun(t *testing.T) {
	e := clusterEnv(t, "", [2]string{"scripted", `{"turns": [{"text": "done"}]}`})
	a := e.serve(t, "--workers", "0")
	b := e.serve(t, "--workers", "2")
	first := startSSE(t, post(t, a.base+"/v1/runs", `{"threadId":"t","runId":"r1","messages":[{"id":"u1","role":"user","content":"hi"}]}`))
	if fin := first.until(t, "RUN_FINISHED"); fin["result"].(map[string]any)["status"] != "completed" {
		t.Fatalf("run ended %v", fin)
	}
	resp := post(t, b.base+"/v1/runs", `{"threadId":"t","runId":"r1","messages":[{"id":"u2","role":"user","content":"again"}]}`)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `{"error":"run \"r1\" not started: the session already has a run with that id"}`; resp.StatusCode != 409 || strings.TrimSpace(string(body)) != want {
		t.Fatalf("reused run id: %d %s, want 409 %s", resp.StatusCode, body, want)
	}
	bad := startSSE(t, post(t, a.base+"/v1/runs", `{"threadId":"t2","runId":"r9","messages":[{"id":"u3","role":"user","content":"hi"}],"forwardedProps":{"agent":"nobody"}}`))
	ev := bad.until(t, "RUN_ERROR")
	if ev["code"] != "not_started" || !strings.Contains(ev["message"].(string), `run "r9" did not start`) {
		t.Fatalf("unstarted run: %v", ev)
	}
}
