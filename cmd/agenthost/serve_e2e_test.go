package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// served is a running `agenthost serve` process.
type served struct {
	cmd  *exec.Cmd
	base string // http://ADDR
	done chan struct{}
	err  error // the exit, once done is closed

	mu     sync.Mutex
	stderr bytes.Buffer
}

func (s *served) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// wait waits for the process to exit, within a bound.
func (s *served) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-s.done:
		return s.err
	case <-time.After(readyBound):
		t.Fatalf("serve did not exit:\n%s", s.log())
		return nil
	}
}

// serve starts `agenthost serve --addr 127.0.0.1:0 [flags]` and waits for its address.
func (e *agentEnv) serve(t *testing.T, flags ...string) *served {
	t.Helper()
	return e.serveArgs(t, append([]string{"serve", "--addr", "127.0.0.1:0"}, flags...)...)
}

// serveArgs starts `agenthost -c MANIFEST ARGS...`, a server, and waits for its address.
func (e *agentEnv) serveArgs(t *testing.T, args ...string) *served {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), append([]string{"-c", e.manifest}, args...)...)
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "AGENTHOST_TOKEN=")
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &served{cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.stderr.WriteString(line + "\n")
			s.mu.Unlock()
			if a, ok := strings.CutPrefix(line, "agenthost: serving on "); ok {
				addr <- a
			}
		}
	}()
	go func() { s.err = cmd.Wait(); pw.Close(); close(s.done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-s.done })
	select {
	case s.base = <-addr:
	case <-s.done:
		t.Fatalf("serve exited: %v\n%s", s.err, s.log())
	case <-time.After(readyBound):
		t.Fatalf("serve did not start:\n%s", s.log())
	}
	return s
}

// postRun starts a run and returns the response (the SSE stream).
func (s *served) postRun(t *testing.T, thread, run, text string) *http.Response {
	t.Helper()
	body := fmt.Sprintf(`{"threadId":%q,"runId":%q,"messages":[{"id":"m","role":"user","content":%q}]}`, thread, run, text)
	resp, err := http.Post(s.base+"/v1/runs", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST /v1/runs: %d %s", resp.StatusCode, b)
	}
	return resp
}

// readUntil reads SSE events until one has the type, and returns the types seen.
func readUntil(t *testing.T, sc *bufio.Scanner, typ string) []string {
	t.Helper()
	var seen []string
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("bad event %s", data)
		}
		seen = append(seen, ev.Type)
		if ev.Type == typ {
			return seen
		}
	}
	t.Fatalf("stream ended before %s; saw %v", typ, seen)
	return nil
}

type storedSession struct {
	Entries []struct {
		Kind  string `json:"kind"`
		Event *struct {
			Type  string `json:"type"`
			RunID string `json:"run_id"`
			Data  struct {
				Status string `json:"status"`
				Reason string `json:"reason"`
			} `json:"data"`
		} `json:"event"`
	} `json:"entries"`
	Runs []struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	} `json:"runs"`
}

func (s *served) session(t *testing.T, id string) storedSession {
	t.Helper()
	resp, err := http.Get(s.base + "/v1/sessions/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ss storedSession
	if err := json.NewDecoder(resp.Body).Decode(&ss); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET session %s: %d %v", id, resp.StatusCode, err)
	}
	return ss
}

// slowSecondTurn makes the run's second model call hang, after the calc call ran.
const slowSecondTurn = `{"per_session": true, "turns": [
  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]},
  {"delay_ms": 120000, "text": "too late"}
]}`

const continueTurn = `{"per_session": true, "turns": [
  {"expect": {"last_role": "user", "contains": "again"}, "text": "Back: {{result c1}}"}
]}`

// checkAbortedRun asserts the first run of the session is stored as aborted, ending
// with a stored run_finished{aborted}.
func checkAbortedRun(t *testing.T, ss storedSession) {
	t.Helper()
	if len(ss.Runs) == 0 || ss.Runs[0].ID != "r1" || ss.Runs[0].Status != "aborted" {
		t.Fatalf("runs %+v", ss.Runs)
	}
	last := ss.Entries[len(ss.Entries)-1]
	if last.Event == nil || last.Event.Type != "run_finished" || last.Event.RunID != "r1" || last.Event.Data.Status != "aborted" {
		t.Fatalf("last stored entry %+v", last)
	}
}

// continueSession runs again on the session and expects the final answer.
func continueSession(t *testing.T, s *served) {
	t.Helper()
	resp := s.postRun(t, "s1", "r2", "again")
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), `"result":{"status":"completed","reason":"end_turn","text":"Back: 42"}`) {
		t.Fatalf("continued run:\n%s", b)
	}
}

func TestE2E_ServeKilledMidRunIsRecoveredByTheNextServer(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", slowSecondTurn})
	s := e.serve(t)
	resp := s.postRun(t, "s1", "r1", "six times seven")
	sc := bufio.NewScanner(resp.Body)
	readUntil(t, sc, "TOOL_CALL_RESULT") // the calc result is stored; the next model call hangs
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = s.wait(t)
	resp.Body.Close()

	if err := os.WriteFile(filepath.Join(e.dir, "scripted.json"), []byte(continueTurn), 0o644); err != nil {
		t.Fatal(err)
	}
	s2 := e.serve(t)
	if !strings.Contains(s2.log(), "agenthost: marked 1 unfinished run(s) of processes that died as aborted") {
		t.Fatalf("second server did not report the recovery:\n%s", s2.log())
	}
	checkAbortedRun(t, s2.session(t, "s1"))
	continueSession(t, s2)
}

// With --grace 0 SIGTERM aborts the runs in progress at once (drain_e2e_test.go: the
// runs finish within a grace).
func TestE2E_ServeSIGTERMAbortsRunsAndExitsCleanly(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", slowSecondTurn})
	s := e.serve(t, "--grace", "0")
	resp := s.postRun(t, "s1", "r1", "six times seven")
	sc := bufio.NewScanner(resp.Body)
	readUntil(t, sc, "TOOL_CALL_RESULT")
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	seen := readUntil(t, sc, "RUN_FINISHED")
	resp.Body.Close()
	if err := s.wait(t); err != nil {
		t.Fatalf("serve exited with %v\n%s", err, s.log())
	}
	if !strings.Contains(s.log(), "agenthost: stopped") {
		t.Fatalf("stderr:\n%s (events %v)", s.log(), seen)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "scripted.json"), []byte(continueTurn), 0o644); err != nil {
		t.Fatal(err)
	}
	s2 := e.serve(t)
	if strings.Contains(s2.log(), "unfinished") {
		t.Fatalf("a graceful shutdown left unfinished runs:\n%s", s2.log())
	}
	checkAbortedRun(t, s2.session(t, "s1"))
	continueSession(t, s2)
}
