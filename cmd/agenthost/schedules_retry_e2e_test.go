package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// A schedule's fire is a River job: its node is SIGKILLed after the fire's tool call
// stored its result and while the model is still answering; a worker rescues the job
// and the fire's retry continues the tick's session (run fire~2, no new prompt) instead
// of starting it again: the tool is not called a second time, the session holds one
// prompt and ends with the rescuer's answer built on the stored result.
func TestE2E_AScheduleFiresRetriedJobContinuesItsSession(t *testing.T) {
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
		[2]string{"rescuer", `{"turns": [{"expect": {"last_role": "tool"}, "text": "Digest after the rescue: {{result g1}}."}]}`})
	e.withSchedules(t, `[[schedules]]
name = "digest"
every = "2s"
user = "alice"
prompt = "fetch my day"
`)
	if r := e.agenthost(t, "users", "add", "alice", "--role", "user"); r.code != 0 {
		t.Fatalf("users add: %d %s", r.code, r.stderr)
	}
	// One worker: the first tick's fire holds it; later ticks wait in the queue.
	a := e.serve(t, "--workers", "1")
	tick := waitLogRe(t, a, regexp.MustCompile(`schedule digest: claimed tick (\S+) for the cluster`))[1]
	at, err := time.Parse(time.RFC3339, tick)
	if err != nil {
		t.Fatal(err)
	}
	session := fmt.Sprintf("sched-digest-%d", at.Unix())
	for deadline := time.Now().Add(readyBound); !strings.Contains(e.agenthost(t, "sessions", "show", session).stdout, "fetched"); {
		if time.Now().After(deadline) {
			t.Fatalf("the fire's tool result was never stored:\n%s", a.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.done

	e.startWorker(t, "--provider", "rescuer", "--rescue-after", "2s")
	// Each run's end, as the store holds the tick's session.
	var ends []string
	for deadline := time.Now().Add(readyBound); ; {
		r := e.agenthost(t, "sessions", "show", session, "--json")
		ends = ends[:0]
		for _, ev := range events(t, r.stdout) {
			if d, ok := ev.Data.(*loop.RunFinishedData); ok {
				ends = append(ends, ev.RunID+":"+string(d.Status))
			}
		}
		if n := len(ends); n > 0 && strings.HasSuffix(ends[n-1], ":completed") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fire's session never completed: %v\n%s", ends, r.stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The dead attempt is closed as aborted; its continuation completes.
	if strings.Join(ends, " ") != "fire:aborted fire~2:completed" {
		t.Fatalf("the tick's session has runs %v, want fire (closed) and its continuation fire~2", ends)
	}
	show := e.agenthost(t, "sessions", "show", session).stdout
	if strings.Count(show, "fetch my day") != 1 || strings.Count(show, "fetched") != 2 || !strings.Contains(show, "assistant: Digest after the rescue: fetched.") {
		t.Fatalf("the tick's session:\n%s", show)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("the fire's tool ran %d times, want once", n)
	}
}
