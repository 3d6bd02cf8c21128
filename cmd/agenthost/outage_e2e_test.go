package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/store/pgtest"
)

// Issue 29, through real processes: PostgreSQL crashes (pg_ctl stop -m immediate) while
// a run of `serve --workers 1` waits for its model, after its tool's result was stored;
// the model answers while the database is down, so the run's end cannot be stored. Once
// the database is back, River retries the job (it is not completed), the retry continues
// the session, and the client's stream, which reported the outage, shows one run ending
// once. The tool, whose result was stored, ran once.
func TestE2E_StoreOutage_DatabaseCrashMidRunIsRetriedAndEndsOnce(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "fetched")
	}))
	defer srv.Close()
	args, _ := json.Marshal(map[string]string{"url": srv.URL})
	fixture, _ := json.Marshal(map[string]any{"per_session": true, "turns": []any{
		map[string]any{"tool_calls": []any{map[string]string{"id": "g1", "name": "http_get", "arguments": string(args)}}},
		map[string]any{"expect": map[string]string{"last_role": "tool"}, "text": "lost in the outage", "delay_ms": 5000},
		map[string]any{"expect": map[string]string{"last_role": "tool"}, "text": "Done after the outage: {{result g1}}."},
	}})
	e := clusterEnv(t, "", [2]string{"scripted", string(fixture)})
	node := e.serve(t, "--workers", "1")
	pg := pgtest.Start(t)

	run := startSSE(t, post(t, node.base+"/v1/runs", `{"threadId":"o1","runId":"ro","messages":[{"id":"u1","role":"user","content":"fetch it"}]}`))
	run.until(t, "TOOL_CALL_RESULT") // stored; the next model call takes 5 s
	restart := pg.Crash(t)
	restarted := false
	defer func() {
		if !restarted { // the server is shared by the package's tests
			restart()
		}
	}()
	for run.until(t, "CUSTOM")["name"] != "agenthost.store_unavailable" { // the stream reports the outage
	}
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(node.log(), "the store is unreachable") { // the run failed to store its end
		if time.Now().After(deadline) {
			t.Fatalf("the worker did not report the outage:\n%s", node.log())
		}
		time.Sleep(50 * time.Millisecond) // polling the log, bounded by the deadline
	}
	restart()
	restarted = true

	fin := run.until(t, "RUN_FINISHED")
	if res := fin["result"].(map[string]any); res["status"] != "completed" || res["text"] != "Done after the outage: fetched." {
		t.Fatalf("run after the outage: %v\nevents %v\nlog:\n%s", fin, types(run.all), node.log())
	}
	all := " " + strings.Join(types(run.all), " ") + " "
	if strings.Count(all, " RUN_STARTED ") != 1 || strings.Count(all, " RUN_FINISHED ") != 1 ||
		strings.Count(all, " TOOL_CALL_RESULT ") != 1 || strings.Contains(all, " RUN_ERROR ") {
		t.Fatalf("the client saw: %v", types(run.all))
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("the tool, whose result was stored, ran %d times", n)
	}
	ends := e.storedEnds(t, "o1", "ro")
	if len(ends) != 1 || ends[0] != "aborted" {
		t.Fatalf("stored ends of the attempt cut by the outage: %v", ends)
	}
	if ends := e.storedEnds(t, "o1", "ro~2"); len(ends) != 1 || ends[0] != "completed" {
		t.Fatalf("stored ends of its retry: %v", ends)
	}
}

// Issue 29 on one node (`serve` without --workers, a PostgreSQL store): PostgreSQL
// crashes while a run's tool runs, so the tool's result cannot be written. The run waits
// for the database (rule L23, `--store-wait`), writes the result when it is back, and
// goes on: the client's stream shows one run, the tool once, the wait reported as an
// error event, and the run completed; the store holds that one end.
func TestE2E_StoreOutage_SingleNodeRunWaitsForTheDatabaseAndEndsOnce(t *testing.T) {
	pg := pgtest.Start(t)
	var hits atomic.Int32
	called, crashed := make(chan struct{}, 1), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			called <- struct{}{}
			<-crashed // down before the tool answers: its result's write fails
		}
		fmt.Fprint(w, "fetched")
	}))
	defer srv.Close()
	args, _ := json.Marshal(map[string]string{"url": srv.URL})
	fixture, _ := json.Marshal(map[string]any{"turns": []any{
		map[string]any{"tool_calls": []any{map[string]string{"id": "g1", "name": "http_get", "arguments": string(args)}}},
		map[string]any{"expect": map[string]string{"last_role": "tool"}, "text": "Done after the outage: {{result g1}}."},
	}})
	e := clusterEnv(t, "", [2]string{"scripted", string(fixture)})
	node := e.serve(t)

	run := startSSE(t, post(t, node.base+"/v1/runs", `{"threadId":"s1","runId":"r1","messages":[{"id":"u1","role":"user","content":"fetch it"}]}`))
	select {
	case <-called:
	case <-time.After(readyBound):
		t.Fatal("the tool was not called")
	}
	restart := pg.Crash(t)
	close(crashed)
	// Starting PostgreSQL takes far longer than the tool's answer takes to reach the
	// run's write; were it ever quicker, no wait would be reported and the test fails.
	restart()

	fin := run.until(t, "RUN_FINISHED")
	if res := fin["result"].(map[string]any); res["status"] != "completed" || res["text"] != "Done after the outage: fetched." {
		t.Fatalf("run after the outage: %v\nevents %v\nlog:\n%s", fin, types(run.all), node.log())
	}
	all := " " + strings.Join(types(run.all), " ") + " "
	if strings.Count(all, " RUN_STARTED ") != 1 || strings.Count(all, " RUN_FINISHED ") != 1 ||
		strings.Count(all, " TOOL_CALL_RESULT ") != 1 || strings.Contains(all, " RUN_ERROR ") {
		t.Fatalf("the client saw: %v", types(run.all))
	}
	waited := false
	for _, ev := range run.all {
		if v, ok := ev["value"].(map[string]any); ok && ev["name"] == "agenthost.error" && v["kind"] == "store_unavailable" {
			waited = strings.Contains(v["message"].(string), "the run waited and went on")
		}
	}
	if !waited {
		t.Fatalf("the stream does not report the wait for the store: %v", run.all)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
	if ends := e.storedEnds(t, "s1", "r1"); len(ends) != 1 || ends[0] != "completed" {
		t.Fatalf("stored ends: %v", ends)
	}
}
