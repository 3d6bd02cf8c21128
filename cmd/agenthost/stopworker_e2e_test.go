package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// Issue 29, a cluster worker paused rather than killed: SIGSTOPped mid-run (its model
// call open) past its lease and River's rescue time, so another worker takes the job,
// closes the paused attempt as aborted and completes the run. SIGCONTed, the paused
// worker gets its model's late answer and tries to store it and its end: every write is
// refused (its lease was taken over), so the session holds one end per attempt, the late
// answer nowhere, and the client saw one run that completed. The tool, whose result was
// stored, ran once.
func TestE2E_WorkerStoppedPastItsLeaseCompletesElsewhereAndWritesNothingWhenResumed(t *testing.T) {
	t.Setenv("AGENTHOST_LEASE_TTL", "1s") // every process below: the paused worker's lease dies fast
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "fetched")
	}))
	defer srv.Close()
	args, _ := json.Marshal(map[string]string{"url": srv.URL})
	fixture, _ := json.Marshal(map[string]any{"turns": []any{
		map[string]any{"tool_calls": []any{map[string]string{"id": "g1", "name": "http_get", "arguments": string(args)}}},
		map[string]any{"expect": map[string]string{"last_role": "tool"}, "text": "too late", "delay_ms": 1500},
	}})
	e := clusterEnv(t, "", [2]string{"scripted", string(fixture)},
		[2]string{"rescuer", `{"turns": [{"expect": {"last_role": "tool"}, "text": "Done after the rescue: {{result g1}}."}]}`})
	a := e.serve(t, "--workers", "0")
	b := e.serve(t, "--workers", "1")
	t.Cleanup(func() { b.cmd.Process.Signal(syscall.SIGCONT) })

	run := startSSE(t, post(t, a.base+"/v1/runs", `{"threadId":"p1","runId":"rp","messages":[{"id":"u1","role":"user","content":"fetch it"}]}`))
	run.until(t, "TOOL_CALL_RESULT") // stored by B, streamed by A; B's model call is open
	if err := b.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	e.startWorker(t, "--provider", "rescuer", "--rescue-after", "2s")
	fin := run.until(t, "RUN_FINISHED")
	if res := fin["result"].(map[string]any); res["status"] != "completed" || res["text"] != "Done after the rescue: fetched." {
		t.Fatalf("run after the rescue: %v\nevents %v", fin, types(run.all))
	}

	if err := b.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// B's model answer (from its adapter, a process of its own that was not stopped) is
	// waiting for it: B goes on with it and tries to store it and the run's end. Stopping
	// B gracefully waits for its runs to store their ends, so every write B tries is
	// tried before it exits.
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	b.wait(t)

	sess := e.agenthost(t, "sessions", "show", "--json", "p1")
	if sess.code != 0 {
		t.Fatalf("sessions show: %d %s", sess.code, sess.stderr)
	}
	if strings.Contains(sess.stdout, "too late") {
		t.Fatalf("the resumed worker's late answer was stored:\n%s", sess.stdout)
	}
	ends := map[string][]string{}
	for _, ev := range events(t, sess.stdout) {
		if d, ok := ev.Data.(*loop.RunFinishedData); ok {
			ends[ev.RunID] = append(ends[ev.RunID], string(d.Status))
		}
	}
	completed := 0
	for id, e := range ends {
		if len(e) != 1 {
			t.Fatalf("run %s ended %d times: %v", id, len(e), ends)
		}
		if e[0] == "completed" {
			completed++
		}
	}
	if completed != 1 || len(ends["rp"]) != 1 || ends["rp"][0] != "aborted" {
		t.Fatalf("stored ends %v, want rp aborted (the paused attempt) and one completed retry", ends)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want once", n)
	}
	if got := strings.Count(strings.Join(types(run.all), " "), "RUN_STARTED"); got != 1 {
		t.Fatalf("the client saw %d RUN_STARTED: %v", got, types(run.all))
	}
}
