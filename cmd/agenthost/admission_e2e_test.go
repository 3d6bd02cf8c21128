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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Overload (issue 47), through a real `serve`: 1,000 runs posted at once to a host whose
// only tool plugin has one instance (pool_size 1) and a 3 s timeout, and whose tool
// takes 500 ms (a loopback page that answers slowly, holding the instance). [admission]
// takes 8 runs in flight and 16 waiting. Before admission every run was taken and the
// tool calls that waited past the plugin's timeout answered "busy: all 1 instances in
// use": here eight admitted runs alone queue 3.5 s of calls for the one instance. Now
// every run either completes with its tool's answer (its call executed exactly once),
// having waited in the queue or not, or is refused at once with 429 and Retry-After;
// no stream carries "busy".
func TestE2E_OverloadAdmittedRunsToolsAreNeverBusyTheRestQueueOr429(t *testing.T) {
	const runs = 1000
	var fetched atomic.Int32
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(500 * time.Millisecond) // the tool's work: the instance is held meanwhile
		fetched.Add(1)
		fmt.Fprint(w, "fetched")
	}))
	defer page.Close()
	build := exec.Command("bash", "scripts/plugins.d/examples.sh", "http_get")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build http_get: %v\n%s", err, out)
	}
	args, _ := json.Marshal(map[string]string{"url": page.URL})
	fixture, _ := json.Marshal(map[string]any{"per_session": true, "turns": []any{
		map[string]any{"tool_calls": []any{map[string]string{"id": "g1", "name": "http_get", "arguments": string(args)}}},
		map[string]any{"expect": map[string]string{"last_role": "tool"}, "text": "Done: {{result g1}}."},
	}})
	e := newEnv(t, "", "", [2]string{"scripted", string(fixture)})
	b, _ := os.ReadFile(e.manifest)
	m := string(b) + examplePlugin("http_get", "tool", "pool_size = 1\n[plugins.permissions]\nallowed_hosts = [\"127.0.0.1\"]\ntimeout = \"3s\"") +
		"\n[admission]\nmax_runs = 8\nqueue = 16\nqueue_timeout = \"10m\"\n"
	if err := os.WriteFile(e.manifest, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	node := e.serve(t)

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: runs}}
	type outcome struct {
		code       int
		retryAfter string
		body       string
		queued     bool
		text       string
	}
	out := make([]outcome, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"threadId":"t%d","runId":"r%d","messages":[{"id":"u","role":"user","content":"fetch it"}]}`, i, i)
			resp, err := client.Post(node.base+"/v1/runs", "application/json", strings.NewReader(body))
			if err != nil {
				out[i].body = err.Error()
				return
			}
			defer resp.Body.Close()
			o := &out[i]
			o.code, o.retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
			if resp.StatusCode != http.StatusOK {
				all, _ := io.ReadAll(resp.Body)
				o.body = string(all)
				return
			}
			var sb strings.Builder
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				sb.WriteString(sc.Text() + "\n")
				data, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok {
					continue
				}
				var ev map[string]any
				if json.Unmarshal([]byte(data), &ev) != nil {
					continue
				}
				switch ev["type"] {
				case "CUSTOM":
					o.queued = o.queued || ev["name"] == "agenthost.queued"
				case "RUN_FINISHED":
					if res, _ := ev["result"].(map[string]any); res["status"] == "completed" {
						o.text, _ = res["text"].(string)
					}
				}
			}
			o.body = sb.String()
		}()
	}
	wg.Wait()

	completed, queued, refused := 0, 0, 0
	for i, o := range out {
		switch {
		case strings.Contains(o.body, "busy"):
			t.Fatalf("run %d met a busy tool (%d):\n%s", i, o.code, o.body)
		case o.code == http.StatusOK && o.text == "Done: fetched.":
			completed++
			if o.queued {
				queued++
			}
		case o.code == http.StatusTooManyRequests:
			if s, err := strconv.Atoi(o.retryAfter); err != nil || s < 1 || !strings.Contains(o.body, "overloaded") {
				t.Fatalf("run %d refused without a Retry-After (%q): %s", i, o.retryAfter, o.body)
			}
			refused++
		default:
			t.Fatalf("run %d: %d %s\nserve log:\n%s", i, o.code, o.body, node.log())
		}
	}
	t.Logf("%d runs: %d completed (%d of them queued first), %d refused with 429", runs, completed, queued, refused)
	if completed+refused != runs || completed < 8 || queued == 0 || refused == 0 {
		t.Fatalf("completed %d (queued %d), refused %d of %d: the host was not saturated", completed, queued, refused, runs)
	}
	if n := int(fetched.Load()); n != completed {
		t.Fatalf("the tool ran %d times for %d completed runs: every admitted run's call runs once", n, completed)
	}
}
