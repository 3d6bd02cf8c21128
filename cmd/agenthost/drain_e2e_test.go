package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// gate is a tool endpoint (http_get's URL) that holds every request until it is opened:
// a run whose tool call is in flight, for as long as the test needs.
type gate struct {
	srv  *httptest.Server
	hit  chan struct{}
	open chan struct{}
	hits atomic.Int32
}

func newGate(t *testing.T) *gate {
	g := &gate{hit: make(chan struct{}, 8), open: make(chan struct{})}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.hits.Add(1)
		g.hit <- struct{}{}
		select {
		case <-g.open:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "fetched")
	}))
	t.Cleanup(g.srv.Close)
	t.Cleanup(func() { g.release() })
	return g
}

func (g *gate) release() {
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

// waitHit waits until the tool call reached the gate.
func (g *gate) waitHit(t *testing.T) {
	t.Helper()
	select {
	case <-g.hit:
	case <-time.After(readyBound):
		t.Fatal("the tool call never reached the gate")
	}
}

// fetchStory is the scripted story of a run that calls http_get on url, then answers
// with its result.
func fetchStory(url string) map[string]any {
	args, _ := json.Marshal(map[string]string{"url": url})
	return map[string]any{"when": "fetch", "turns": []any{
		map[string]any{"tool_calls": []any{map[string]string{"id": "g1", "name": "http_get", "arguments": string(args)}}},
		map[string]any{"expect": map[string]string{"last_role": "tool"}, "text": "Got {{result g1}}."},
	}}
}

func storiesFixture(stories ...map[string]any) string {
	b, _ := json.Marshal(map[string]any{"stories": stories})
	return string(b)
}

// getStatus GETs url and returns the status and the Retry-After header.
func getStatus(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// untilStatus polls url until it answers want (the hang guard bounds it).
func untilStatus(t *testing.T, url string, want int) {
	t.Helper()
	deadline := time.Now().Add(readyBound)
	for code, _ := getStatus(t, url); code != want; code, _ = getStatus(t, url) {
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %d, never %d", url, code, want)
		}
		time.Sleep(20 * time.Millisecond) // polling a probe
	}
}

// refusedWhileDraining posts a new run to a draining node: 503 with Retry-After.
func refusedWhileDraining(t *testing.T, base string) {
	t.Helper()
	resp := post(t, base+"/v1/runs", `{"threadId":"late","runId":"rl","messages":[{"id":"u1","role":"user","content":"fetch late"}]}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "shutting down") {
		t.Fatalf("a run sent to a draining node: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
}

// storedEnds reads a session's stored run ends, by run id.
func storedEnds(t *testing.T, e *agentEnv, session string) map[string][]string {
	t.Helper()
	sess := e.agenthost(t, "sessions", "show", "--json", session)
	if sess.code != 0 {
		t.Fatalf("sessions show %s: %d %s", session, sess.code, sess.stderr)
	}
	ends := map[string][]string{}
	for _, ev := range events(t, sess.stdout) {
		if d, ok := ev.Data.(*loop.RunFinishedData); ok {
			ends[ev.RunID] = append(ends[ev.RunID], string(d.Status))
		}
	}
	return ends
}

// One node on SQLite, SIGTERMed while a run's tool call is in flight: /healthz still
// answers, /readyz fails, a new run is refused with 503 and Retry-After, and the run in
// flight completes (it is not aborted) before the process exits cleanly.
func TestE2E_SIGTERMDrainsTheRunsInProgressWithinTheGrace(t *testing.T) {
	buildExamples(t, "http_get")
	g := newGate(t)
	e := newEnv(t, "", "", [2]string{"scripted", storiesFixture(fetchStory(g.srv.URL))})
	appendManifest(t, e.manifest, examplePlugin("http_get", "tool", "[plugins.permissions]\nallowed_hosts = [\"127.0.0.1\"]\ntimeout = \"60s\""))
	s := e.serve(t, "--grace", "2m")
	untilStatus(t, s.base+"/readyz", http.StatusOK)

	run := startSSE(t, post(t, s.base+"/v1/runs", `{"threadId":"d1","runId":"r1","messages":[{"id":"u1","role":"user","content":"fetch it"}]}`))
	g.waitHit(t)
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	untilStatus(t, s.base+"/readyz", http.StatusServiceUnavailable)
	if code, _ := getStatus(t, s.base+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz while draining: %d", code)
	}
	refusedWhileDraining(t, s.base)

	g.release()
	fin := run.until(t, "RUN_FINISHED")
	if res := fin["result"].(map[string]any); res["status"] != "completed" || res["text"] != "Got fetched." {
		t.Fatalf("the run in flight at SIGTERM ended %v", fin)
	}
	if err := s.wait(t); err != nil || !strings.Contains(s.log(), "agenthost: stopped") {
		t.Fatalf("serve exited with %v\n%s", err, s.log())
	}
	if ends := storedEnds(t, e, "d1"); len(ends) != 1 || len(ends["r1"]) != 1 || ends["r1"][0] != "completed" {
		t.Fatalf("stored ends %v, want r1 completed once", ends)
	}
}

// Issue 52's drain on a cluster: two serve --workers nodes on PostgreSQL. B executes two
// runs when it is SIGTERMed: one waiting on its tool call, one on a slow model. B stops
// taking runs (readyz 503, new runs 503), the first run completes on B within the grace;
// the second, still going when the grace ends, is stored as aborted and handed back to
// River, and A continues it to its end. B's stream of it says where to pick it up; A's
// stream of it ends with the completed run. Every run ends exactly once, the tool ran
// once.
func TestE2E_DrainingNodeFinishesWhatItCanAndHandsTheRestToAnotherNode(t *testing.T) {
	g := newGate(t)
	ponder := map[string]any{"when": "ponder", "turns": []any{map[string]any{"delay_ms": 600000, "text": "too late"}}}
	e := clusterEnv(t, "", [2]string{"scripted", storiesFixture(fetchStory(g.srv.URL), ponder)},
		[2]string{"rescuer", storiesFixture(map[string]any{"when": "ponder", "turns": []any{map[string]any{"text": "Pondered elsewhere."}}})})
	b := e.serve(t, "--workers", "2", "--grace", "8s")

	fetch := startSSE(t, post(t, b.base+"/v1/runs", `{"threadId":"c1","runId":"r1","messages":[{"id":"u1","role":"user","content":"fetch it"}]}`))
	slow := startSSE(t, post(t, b.base+"/v1/runs", `{"threadId":"c2","runId":"r2","messages":[{"id":"u1","role":"user","content":"ponder it"}]}`))
	g.waitHit(t)
	slow.until(t, "RUN_STARTED")
	a := e.serve(t, "--workers", "1", "--provider", "rescuer") // only now: B holds both runs

	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	g.release()
	untilStatus(t, b.base+"/readyz", http.StatusServiceUnavailable)
	refusedWhileDraining(t, b.base)
	if code, _ := getStatus(t, a.base+"/readyz"); code != http.StatusOK {
		t.Fatalf("A's /readyz: %d", code)
	}

	fin := fetch.until(t, "RUN_FINISHED")
	if res := fin["result"].(map[string]any); res["status"] != "completed" || res["text"] != "Got fetched." {
		t.Fatalf("the fetch run ended %v", fin)
	}
	for note := slow.until(t, "CUSTOM"); note["name"] != "agenthost.node_draining"; note = slow.until(t, "CUSTOM") {
	}
	if got := types(slow.all); got[len(got)-1] != "CUSTOM" || strings.Contains(strings.Join(got, " "), "RUN_FINISHED") {
		t.Fatalf("B's stream of the slow run: %v", got)
	}
	if err := b.wait(t); err != nil || !strings.Contains(b.log(), "agenthost: stopped") {
		t.Fatalf("B exited with %v\n%s", err, b.log())
	}

	resumed := startSSE(t, getResp(t, a.base+"/v1/sessions/c2/runs/r2/stream"))
	fin = resumed.until(t, "RUN_FINISHED")
	if res := fin["result"].(map[string]any); res["status"] != "completed" || res["text"] != "Pondered elsewhere." {
		t.Fatalf("the handed-back run ended %v; events %v", fin, types(resumed.all))
	}
	if ends := storedEnds(t, e, "c1"); len(ends) != 1 || fmt.Sprint(ends["r1"]) != "[completed]" {
		t.Fatalf("c1 stored ends %v, want r1 completed once", ends)
	}
	if ends := storedEnds(t, e, "c2"); len(ends) != 2 || fmt.Sprint(ends["r2"]) != "[aborted]" || fmt.Sprint(ends["r2~2"]) != "[completed]" {
		t.Fatalf("c2 stored ends %v, want B's attempt aborted and A's completed, once each", ends)
	}
	if n := g.hits.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want once", n)
	}
}

func getResp(t *testing.T, url string) *http.Response {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// buildExamples builds example plugins (scripts/plugins.d/examples.sh).
func buildExamples(t *testing.T, names ...string) {
	t.Helper()
	build := exec.Command("bash", append([]string{"scripts/plugins.d/examples.sh"}, names...)...)
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build examples: %v\n%s", err, out)
	}
}
