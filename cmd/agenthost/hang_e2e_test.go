package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// withProviderKeys adds lines to the [providers.scripted] table of e's manifest.
func (e *agentEnv) withProviderKeys(t *testing.T, lines string) {
	t.Helper()
	b, err := os.ReadFile(e.manifest)
	if err != nil {
		t.Fatal(err)
	}
	const anchor = `options = { script = "scripted.json" }`
	s := strings.Replace(string(b), anchor, anchor+"\n"+lines, 1)
	if s == string(b) {
		t.Fatal("no [providers.scripted] options line")
	}
	if err := os.WriteFile(e.manifest, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// childPIDs lists the processes whose parent is pid, from each of its threads'
// /proc children list (a Go program starts children from any thread).
func childPIDs(pid int) []int {
	files, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "children"))
	var out []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, field := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(field); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// TestE2E_Hole9_FirstTokenTimeoutFromTheManifestRetriesAHungCall: a provider that
// never answers the first call no longer hangs the run: first_token_timeout ends the
// call, the loop retries it, and the run completes.
func TestE2E_Hole9_FirstTokenTimeoutFromTheManifestRetriesAHungCall(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"delay_ms": 600000, "text": "never"}, {"text": "answered"}]}`})
	e.withProviderKeys(t, `first_token_timeout = "1s"`+"\n"+`idle_timeout = "0s"`)
	r := e.agenthost(t, "run", "--json", "hello")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	s := shape(events(t, r.stdout))
	if !strings.Contains(strings.Join(s, " "), "error:provider") || s[len(s)-3] != "final:answered" {
		t.Fatalf("events %q", s)
	}
	for _, ev := range events(t, r.stdout) {
		if d, ok := ev.Data.(*loop.ErrorData); ok && !strings.Contains(d.Message, "no event within first_token_timeout (1s)") {
			t.Fatalf("error event %q", d.Message)
		}
	}
}

// TestE2E_Hole9_CtrlCExitsWithAStoppedAdapter: with the adapter process stopped
// (SIGSTOP), Ctrl-C still ends agenthost with 130 and the session kept: the adapter
// that cannot answer its shutdown request is killed.
func TestE2E_Hole9_CtrlCExitsWithAStoppedAdapter(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"delay_ms": 600000, "text": "too late"}]}`})
	var adapter int
	lr := e.startRun(t, func(cmd *exec.Cmd) {
		kids := childPIDs(cmd.Process.Pid)
		if len(kids) != 1 {
			cmd.Process.Kill()
			t.Fatalf("adapter processes: %v", kids)
		}
		adapter = kids[0]
		if err := syscall.Kill(adapter, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	})
	lr.cmd.Process.Signal(os.Interrupt)
	if code := lr.wait(t, func() { syscall.Kill(adapter, syscall.SIGKILL) }); code != 130 {
		t.Fatalf("exit %d, want 130", code)
	}
	// The stopped adapter was killed, not left behind.
	gone := false
	for deadline := time.Now().Add(readyBound); !gone && time.Now().Before(deadline); {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(adapter), "stat"))
		gone = err != nil || strings.Contains(string(b), ") Z ")
		if !gone {
			time.Sleep(25 * time.Millisecond)
		}
	}
	if !gone {
		syscall.Kill(adapter, syscall.SIGKILL)
		t.Fatalf("adapter %d still running", adapter)
	}
	s := shape(events(t, e.agenthost(t, "sessions", "show", lr.session, "--json").stdout))
	if s[len(s)-1] != "run_finished:aborted/cancelled" {
		t.Fatalf("stored events %q", s)
	}
}

// bgRun is `agenthost run --json hello` started in the background.
type bgRun struct {
	cmd     *exec.Cmd
	session string
	waited  chan error
}

// startRun starts a run and returns once it reports model_running, after calling
// atModel (which may be nil) at that moment; the rest of its output is drained.
func (e *agentEnv) startRun(t *testing.T, atModel func(*exec.Cmd)) *bgRun {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", e.manifest, "run", "--json", "hello")
	cmd.Dir = e.dir
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lr := &bgRun{cmd: cmd, waited: make(chan error, 1)}
	sc := bufio.NewScanner(stdout)
	for lr.session == "" && sc.Scan() {
		var ev loop.Event
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type == loop.EventStatus && ev.Data.(*loop.StatusData).State == loop.StateModelRunning {
			lr.session = ev.SessionID
			if atModel != nil {
				atModel(cmd)
			}
		}
	}
	go func() {
		for sc.Scan() { // drain the rest of the events
		}
		lr.waited <- cmd.Wait()
	}()
	if lr.session == "" {
		t.Fatal("the run never reported model_running")
	}
	return lr
}

// wait returns the run's exit code; a run still going after readyBound (a hang guard,
// not a speed assertion) is killed, after onHang, and fails the test.
func (lr *bgRun) wait(t *testing.T, onHang func()) int {
	t.Helper()
	select {
	case <-lr.waited:
	case <-time.After(readyBound):
		if onHang != nil {
			onHang()
		}
		lr.cmd.Process.Kill()
		t.Fatal("agenthost did not stop on SIGINT")
	}
	return lr.cmd.ProcessState.ExitCode()
}

// TestE2E_Hole8_InvalidUTF8PromptCompletes: a prompt that is not UTF-8 reaches the
// adapter repaired (U+FFFD) instead of failing every attempt of the call.
func TestE2E_Hole8_InvalidUTF8PromptCompletes(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"expect": {"contains": "caf\ufffd"}, "text": "fine"}]}`})
	r := e.agenthost(t, "run", "--json", "caf\xe9 \xff")
	if r.code != 0 {
		t.Fatalf("exit %d: %s\n%s", r.code, r.stderr, r.stdout)
	}
	s := shape(events(t, r.stdout))
	if s[len(s)-3] != "final:fine" || s[len(s)-1] != "run_finished:completed/end_turn" {
		t.Fatalf("events %q", s)
	}
}
