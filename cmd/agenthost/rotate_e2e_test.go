package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// streamEnd posts a run and reads its SSE stream to the end: the RUN_FINISHED event, or
// an error (RUN_ERROR, a refused request, a stream cut short). Safe off the test goroutine.
func streamEnd(url, body string) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), readyBound)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("%d %s", resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev map[string]any
		if json.Unmarshal([]byte(data), &ev) != nil {
			continue
		}
		switch ev["type"] {
		case "RUN_FINISHED":
			return ev, nil
		case "RUN_ERROR":
			return ev, fmt.Errorf("RUN_ERROR %s", data)
		}
	}
	return nil, fmt.Errorf("the stream ended without RUN_FINISHED: %v", sc.Err())
}

// writer is one kind of write serve makes while keys rotate, numbered so that a lost
// one is named.
type writer struct {
	name string
	do   func(i int) error // the i-th write; nil once acknowledged
	mu   sync.Mutex
	ack  []int
	err  error
}

func (w *writer) acked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.ack)
}

func (w *writer) run(stop <-chan struct{}) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		err := w.do(i)
		w.mu.Lock()
		if err != nil {
			w.err = fmt.Errorf("%s %d: %w", w.name, i, err)
			w.mu.Unlock()
			return
		}
		w.ack = append(w.ack, i)
		w.mu.Unlock()
	}
}

// rotateEnv is a keyed SQLite agent with a two-step workflow and memories.
func rotateEnv(t *testing.T) (*agentEnv, func(lines ...string)) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"repeat": true, "turns": [{"text": "noted"}]}`})
	manifest, _ := os.ReadFile(e.manifest)
	keyed := strings.Replace(string(manifest), `path = "sessions.db"`, `path = "sessions.db"`+"\nkey_file = \"store.key\"", 1)
	if err := os.WriteFile(e.manifest, []byte(keyed), 0o644); err != nil {
		t.Fatal(err)
	}
	appendManifest(t, e.manifest, `
[memory]
enabled = true

[workflows.tally]
[[workflows.tally.steps]]
id = "a"
tool = "calc"
arguments = { expression = "2 * 21" }
[[workflows.tally.steps]]
id = "b"
tool = "calc"
arguments = { expression = "1 + 1" }
depends_on = ["a"]
`)
	keyFile := filepath.Join(e.dir, "store.key")
	return e, func(lines ...string) { // as an operator's editor would: a new file renamed over
		tmp := keyFile + ".new"
		if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, keyFile); err != nil {
			t.Fatal(err)
		}
	}
}

// waitLog waits for serve to log a line holding want.
func waitLog(t *testing.T, s *served, want string) {
	t.Helper()
	deadline := time.Now().Add(readyBound)
	for !strings.Contains(s.log(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("serve never logged %q:\n%s", want, s.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// `store rotate-key`, looped over four new keys while `serve` writes runs (numbered
// messages on two threads, each run reading its thread back), workflow runs (whose
// record is rewritten at each step) and memories, loses nothing: the procedure of
// docs/encryption.md (new key first in the file; SIGHUP, or nothing, serve notices; rotate-key
// until it re-seals nothing; the old lines removed; SIGHUP) fails no run, and a serve
// started afterwards with the last key alone reads every acknowledged write.
func TestE2E_RotateKeyWhileServeWritesLosesNothing(t *testing.T) {
	e, writeKeys := rotateEnv(t)
	gen := func() string {
		r := e.agenthost(t, "store", "keygen")
		if r.code != 0 {
			t.Fatalf("keygen: %d %s", r.code, r.stderr)
		}
		return strings.TrimSpace(r.stdout)
	}
	id := func(k string) string { return strings.Split(k, ":")[0] }
	ring := []string{gen()}
	writeKeys(ring...)
	s := e.serve(t)
	var writers []*writer
	for j := range 2 {
		writers = append(writers, &writer{name: fmt.Sprintf("run t%d", j), do: func(i int) error {
			_, err := streamEnd(s.base+"/v1/runs", fmt.Sprintf(`{"threadId":"t%d","runId":"r%d-%d","messages":[{"id":"m","role":"user","content":"msg [%d-%d]"}]}`, j, j, i, j, i))
			return err
		}})
	}
	writers = append(writers, &writer{name: "workflow", do: func(i int) error {
		ev, err := streamEnd(s.base+"/v1/workflows/tally/runs", fmt.Sprintf(`{"runId":"w%d","input":{}}`, i))
		if err == nil && ev["result"].(map[string]any)["status"] != "completed" {
			err = fmt.Errorf("RUN_FINISHED %v", ev)
		}
		return err
	}}, &writer{name: "memory", do: func(i int) error {
		resp, err := http.Post(s.base+"/v1/memory", "application/json", strings.NewReader(fmt.Sprintf(`{"user":"ana","text":"memo [%d]"}`, i)))
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("%d %s", resp.StatusCode, b)
		}
		return nil
	}})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, w := range writers {
		wg.Add(1)
		go func() { defer wg.Done(); w.run(stop) }()
	}
	stopped := false
	halt := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer halt()
	// progress waits until every writer has had a few more writes acknowledged.
	progress := func() {
		t.Helper()
		base := make([]int, len(writers))
		for i, w := range writers {
			base[i] = w.acked()
		}
		deadline := time.Now().Add(readyBound)
		for i := 0; i < len(writers); {
			w := writers[i]
			w.mu.Lock()
			n, err := len(w.ack), w.err
			w.mu.Unlock()
			switch {
			case err != nil:
				t.Fatalf("%v\n%s", err, s.log())
			case n >= base[i]+3:
				i++
			case time.Now().After(deadline):
				t.Fatalf("%s made no progress", w.name)
			default:
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	type stats struct {
		Key                                string
		Entries, Values, Memories, Changed int
	}
	changed, passes := 0, 0
	for r := 1; r <= 4; r++ {
		progress()
		k := gen()
		ring = append([]string{k}, ring...)
		writeKeys(ring...)
		if r%2 == 1 {
			if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			waitLog(t, s, "sealing with "+id(k))
		} // else: serve reads the file again when it meets the new key, or sees it change
		for pass := 1; ; pass++ {
			res := e.agenthost(t, "store", "rotate-key", "--json")
			var st stats
			if res.code != 0 || json.Unmarshal([]byte(res.stdout), &st) != nil || st.Key != id(k) {
				t.Fatalf("rotation %d pass %d: %d %s %s", r, pass, res.code, res.stdout, res.stderr)
			}
			changed, passes = changed+st.Changed, passes+1
			if pass == 1 && st.Entries == 0 {
				t.Fatalf("rotation %d re-sealed no entry: %+v", r, st)
			}
			if pass > 1 && st.Entries+st.Values+st.Memories == 0 {
				break
			}
			if pass == 10 {
				t.Fatalf("rotation %d: still re-sealing after %d passes: %+v (serve still on the old key?)", r, pass, st)
			}
		}
	}
	writeKeys(ring[0]) // the old lines removed
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog(t, s, "1 key(s), sealing with "+id(ring[0]))
	progress()
	halt()
	for _, w := range writers {
		if w.err != nil {
			t.Fatalf("%v\n%s", w.err, s.log())
		}
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := s.wait(t); err != nil {
		t.Fatalf("serve: %v\n%s", err, s.log())
	}
	t.Logf("acknowledged: runs %d+%d, workflows %d, memories %d; %d rotate-key passes found %d rows changed meanwhile",
		writers[0].acked(), writers[1].acked(), writers[2].acked(), writers[3].acked(), passes, changed)
	checkEveryWrite(t, e.serve(t), writers)
}

// checkEveryWrite reads back, through a serve holding the last key alone, every write
// the writers had acknowledged.
func checkEveryWrite(t *testing.T, s *served, writers []*writer) {
	t.Helper()
	get := func(path string) string {
		resp, err := http.Get(s.base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	for j := range 2 {
		ss, body := s.session(t, fmt.Sprintf("t%d", j)), get(fmt.Sprintf("/v1/sessions/t%d", j))
		done := 0
		for _, r := range ss.Runs {
			if r.Status == "completed" {
				done++
			}
		}
		if done != writers[j].acked() {
			t.Fatalf("thread t%d: %d completed runs stored, %d acknowledged", j, done, writers[j].acked())
		}
		for _, i := range writers[j].ack {
			if !strings.Contains(body, fmt.Sprintf("msg [%d-%d]", j, i)) {
				t.Fatalf("thread t%d lost message %d", j, i)
			}
		}
	}
	var runs []struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(get("/v1/workflows/tally/runs?limit=1000")), &runs); err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for _, r := range runs {
		status[r.RunID] = r.Status
	}
	for _, i := range writers[2].ack {
		if st := status[fmt.Sprintf("w%d", i)]; st != "completed" {
			t.Fatalf("workflow run w%d is %q, want completed (of %d listed)", i, st, len(runs))
		}
	}
	mem := get("/v1/memory?user=ana&limit=1000")
	for _, i := range writers[3].ack {
		if !strings.Contains(mem, fmt.Sprintf("memo [%d]", i)) {
			t.Fatalf("memory %d lost", i)
		}
	}
	if n := strings.Count(mem, "memo ["); n != writers[3].acked() {
		t.Fatalf("%d memories stored, %d acknowledged", n, writers[3].acked())
	}
}
