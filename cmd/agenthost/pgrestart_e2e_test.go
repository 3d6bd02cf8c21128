package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/store/pgtest"
)

// stepCounter is the tool steps' outside world: GET /RUN/STEP answers "RUN/STEP#N", N
// the how-many-th call of that step it is, after a moment (so the database goes down
// while calls are in flight). A step whose recorded output is not its last call's was
// run again after its end was recorded.
type stepCounter struct {
	mu   sync.Mutex
	hits map[string]int
	srv  *httptest.Server
}

func newStepCounter(t *testing.T) *stepCounter {
	c := &stepCounter{hits: map[string]int{}}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.Trim(r.URL.Path, "/")
		c.mu.Lock()
		c.hits[key]++
		n := c.hits[key]
		c.mu.Unlock()
		select {
		case <-time.After(150 * time.Millisecond): // the tool's own latency
		case <-r.Context().Done():
			return
		}
		fmt.Fprintf(w, "%s#%d", key, n)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *stepCounter) calls(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits[key]
}

// addSteps3 declares workflow steps3: a → b → c, each an http_get of the counter for the
// run (input "run"), each an output.
func addSteps3(t *testing.T, e *agentEnv, c *stepCounter) {
	f, err := os.OpenFile(e.manifest, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprint(f, "\n[workflows.steps3]\n")
	dep := ""
	for _, id := range []string{"a", "b", "c"} {
		fmt.Fprintf(f, "[[workflows.steps3.steps]]\nid = %q\ntool = \"http_get\"\narguments = { url = \"%s/${inputs.run}/%s\" }\noutput = %q\n%s", id, c.srv.URL, id, id, dep)
		dep = fmt.Sprintf("depends_on = [%q]\n", id)
	}
}

// Issue 47, through real processes: PostgreSQL is stopped with `pg_ctl stop -m
// immediate` while workflow runs are in flight on two `serve --workers` nodes, and
// started again, 20 times. Every run ends completed, once (one RUN_FINISHED on its
// stream, no RUN_ERROR, its stored record completed), and no step whose end was recorded
// ran again: each step's recorded output is its last call's. A step whose session an
// earlier attempt held used to fail the run ("session already has a run in progress").
func TestE2E_DatabaseRestartsMidWorkflowEveryRunCompletesOnceAndNoRecordedStepReruns(t *testing.T) {
	const restarts = 20
	pg := pgtest.Start(t)
	c := newStepCounter(t)
	e := clusterEnv(t, "", [2]string{"scripted", `{"turns": []}`})
	addSteps3(t, e, c)
	nodes := []*served{
		e.serve(t, "--workers", "2", "--rescue-after", "60s"),
		e.serve(t, "--workers", "2", "--rescue-after", "60s"),
	}
	var restart func()
	defer func() {
		if restart != nil { // the server is shared by the package's tests
			restart()
		}
	}()
	runs := map[string]*sseRun{}
	var ids []string
	for i := range restarts {
		id := fmt.Sprintf("pr%02d", i)
		ids = append(ids, id)
		runs[id] = startSSE(t, postAfterOutage(t, nodes[i%2].base+"/v1/workflows/steps3/runs", fmt.Sprintf(`{"runId":%q,"input":{"run":%q}}`, id, id)))
		deadline := time.Now().Add(readyBound)
		for c.calls(id+"/a") == 0 { // the run is in flight
			if time.Now().After(deadline) {
				t.Fatalf("run %s never called its first step\n%s\n%s", id, nodes[0].log(), nodes[1].log())
			}
			time.Sleep(10 * time.Millisecond) // polling, bounded by the deadline
		}
		restart = pg.Crash(t)
		restart()
		restart = nil
	}
	for _, id := range ids {
		run := runs[id]
		fin := run.until(t, "RUN_FINISHED")
		res, _ := fin["result"].(map[string]any)
		out, _ := res["output"].(map[string]any)
		if res["status"] != "completed" {
			t.Fatalf("run %s ended %v\nevents %v\nnode 1:\n%s\nnode 2:\n%s", id, fin, types(run.all), nodes[0].log(), nodes[1].log())
		}
		for _, step := range []string{"a", "b", "c"} {
			key := id + "/" + step
			if want := fmt.Sprintf("%s#%d", key, c.calls(key)); !strings.Contains(fmt.Sprint(out[step]), want) {
				t.Fatalf("run %s step %s: recorded output %v, but its last call answered %s: a recorded step ran again", id, step, out[step], want)
			}
		}
		for ev := range run.events { // the stream ends after the run's end
			run.all = append(run.all, ev)
		}
		all := strings.Join(types(run.all), " ")
		if strings.Count(all, "RUN_FINISHED") != 1 || strings.Contains(all, "RUN_ERROR") {
			t.Fatalf("run %s: the client saw %v", id, all)
		}
		resp, err := http.Get(nodes[0].base + "/v1/workflows/steps3/runs/" + id)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var rec struct{ Status string }
		if json.Unmarshal(b, &rec); rec.Status != "completed" {
			t.Fatalf("run %s: stored record %d %s", id, resp.StatusCode, b)
		}
	}
	reruns := 0
	for _, id := range ids {
		for _, step := range []string{"a", "b", "c"} {
			reruns += c.calls(id+"/"+step) - 1
		}
	}
	t.Logf("%d restarts, %d runs completed; %d tool calls cut short by a restart were made again (tool calls are at least once)", restarts, len(ids), reruns)
}

// postAfterOutage posts as a client told to come back does: a 503 (the store did not
// answer: a pooled connection cut by the restart) is tried again, within readyBound.
func postAfterOutage(t *testing.T, url, body string) *http.Response {
	t.Helper()
	deadline := time.Now().Add(readyBound)
	for {
		resp := post(t, url, body)
		if resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
			return resp
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		time.Sleep(100 * time.Millisecond) // Retry-After, shortened: polling, bounded by the deadline
	}
}
