package main

import (
	"bufio"
	"context"
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
// use", or timed out because the wait ate the call's time: here eight admitted runs
// alone queue 3.5 s of calls for the one instance. Now
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
	node := admissionEnv(t, page.URL, "3s", "max_runs = 8\nqueue = 16\nqueue_timeout = \"10m\"").serve(t)

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

// admissionEnv is a served agent whose one tool, http_get (one instance, the plugin
// timeout given), fetches url, and whose [admission] table has the lines given.
func admissionEnv(t *testing.T, url, timeout, admission string) *agentEnv {
	t.Helper()
	build := exec.Command("bash", "scripts/plugins.d/examples.sh", "http_get")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build http_get: %v\n%s", err, out)
	}
	args, _ := json.Marshal(map[string]string{"url": url})
	fixture, _ := json.Marshal(map[string]any{"per_session": true, "turns": []any{
		map[string]any{"tool_calls": []any{map[string]string{"id": "g1", "name": "http_get", "arguments": string(args)}}},
		map[string]any{"expect": map[string]string{"last_role": "tool"}, "text": "Done: {{result g1}}."},
	}})
	e := newEnv(t, "", "", [2]string{"scripted", string(fixture)})
	b, _ := os.ReadFile(e.manifest)
	m := string(b) + examplePlugin("http_get", "tool", fmt.Sprintf("pool_size = 1\n[plugins.permissions]\nallowed_hosts = [\"127.0.0.1\"]\ntimeout = %q", timeout)) +
		"\n[admission]\n" + admission + "\n"
	if err := os.WriteFile(e.manifest, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

// blockingPage answers "fetched" once released; hit is told of each request.
func blockingPage(t *testing.T) (url string, hit chan struct{}, release func()) {
	hit, gate := make(chan struct{}, 16), make(chan struct{})
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hit <- struct{}{}
		<-gate
		fmt.Fprint(w, "fetched")
	}))
	release = sync.OnceFunc(func() { close(gate) })
	t.Cleanup(func() { release(); page.Close() })
	return page.URL, hit, release
}

func postRun(t *testing.T, ctx context.Context, base, id string) *http.Response {
	t.Helper()
	body := fmt.Sprintf(`{"threadId":"t-%s","runId":"%s","messages":[{"id":"u","role":"user","content":"fetch it"}]}`, id, id)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/runs", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// The hostile cases of the queue, through a real `serve` (issue 47). A client that goes
// away while its run is queued frees its place: with one run in flight (held by a tool
// that does not answer) and a queue of one, a newcomer is refused (429) until then and
// queued at position 1 after, although queue_timeout (10m) has not passed. A queued run
// that waits past queue_timeout ends its stream with RUN_ERROR saying why.
func TestE2E_OverloadQueuedClientThatLeavesFreesItsPlaceAndAQueuedRunTimesOutClearly(t *testing.T) {
	url, hit, release := blockingPage(t)
	node := admissionEnv(t, url, "10m", "max_runs = 1\nqueue = 1\nqueue_timeout = \"10m\"").serve(t)
	holder := startSSE(t, postRun(t, context.Background(), node.base, "holder"))
	<-hit // the holder's tool is running: the one place is taken
	ctx, leave := context.WithCancel(context.Background())
	leaver := startSSE(t, postRun(t, ctx, node.base, "leaver"))
	if q := leaver.until(t, "CUSTOM"); q["name"] != "agenthost.queued" || q["value"].(map[string]any)["position"] != 1.0 {
		t.Fatalf("the second run was not queued: %v", q)
	}
	if resp := postRun(t, context.Background(), node.base, "refused"); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("a run past the queue got %d (Retry-After %q), want 429", resp.StatusCode, resp.Header.Get("Retry-After"))
	} else {
		resp.Body.Close()
	}
	leave()
	var next *sseRun
	for deadline := time.Now().Add(readyBound); next == nil; {
		resp := postRun(t, context.Background(), node.base, fmt.Sprintf("next%d", time.Now().UnixNano()))
		switch {
		case resp.StatusCode == http.StatusOK:
			next = startSSE(t, resp)
		case resp.StatusCode != http.StatusTooManyRequests || time.Now().After(deadline):
			t.Fatalf("after the queued client left: %d; serve log:\n%s", resp.StatusCode, node.log())
		default:
			resp.Body.Close()
			time.Sleep(20 * time.Millisecond) // polling until the server sees the client gone
		}
	}
	if q := next.until(t, "CUSTOM"); q["name"] != "agenthost.queued" || q["value"].(map[string]any)["position"] != 1.0 {
		t.Fatalf("the newcomer was not queued first: %v", q)
	}
	release()
	for _, r := range []*sseRun{holder, next} {
		if res := r.until(t, "RUN_FINISHED")["result"].(map[string]any); res["status"] != "completed" || res["text"] != "Done: fetched." {
			t.Fatalf("run ended %v", res)
		}
	}

	url2, hit2, release2 := blockingPage(t)
	node2 := admissionEnv(t, url2, "10m", "max_runs = 1\nqueue = 1\nqueue_timeout = \"500ms\"").serve(t)
	holder2 := startSSE(t, postRun(t, context.Background(), node2.base, "holder"))
	<-hit2
	late := startSSE(t, postRun(t, context.Background(), node2.base, "late"))
	end := late.until(t, "RUN_ERROR")
	if got := strings.Join(types(late.all), " "); !strings.HasPrefix(got, "RUN_STARTED CUSTOM") || !strings.Contains(end["message"].(string), "within queue_timeout 500ms") {
		t.Fatalf("the late run saw %s, ending %v", got, end)
	}
	release2()
	if res := holder2.until(t, "RUN_FINISHED")["result"].(map[string]any); res["status"] != "completed" {
		t.Fatalf("the holder ended %v", res)
	}
}
