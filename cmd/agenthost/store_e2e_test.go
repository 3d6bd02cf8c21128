package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store"
)

// liveRun is a CLI `run` whose second model call hangs after calc ran.
type liveRun struct {
	cmd            *exec.Cmd
	session, runID string
}

func (e *agentEnv) startLiveRun(t *testing.T) *liveRun {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", e.manifest, "run", "--json", "six times seven")
	cmd.Dir = e.dir
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lr := &liveRun{cmd: cmd}
	found := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var ev loop.Event
			if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type == loop.EventToolResult {
				lr.session, lr.runID = ev.SessionID, ev.RunID
				found <- true
				return
			}
		}
		found <- false
	}()
	select {
	case ok := <-found:
		if !ok {
			t.Fatal("the CLI run ended before its tool result")
		}
	case <-time.After(readyBound):
		t.Fatal("the CLI run never reached its tool result")
	}
	return lr
}

// kill SIGKILLs the run and reaps it (a zombie would still answer kill(pid, 0)).
func (lr *liveRun) kill(t *testing.T) {
	t.Helper()
	if err := lr.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	lr.cmd.Wait()
}

// storedEnds lists the stored run_finished statuses of a run.
func (e *agentEnv) storedEnds(t *testing.T, session, runID string) []string {
	t.Helper()
	r := e.agenthost(t, "sessions", "show", "--json", session)
	if r.code != 0 {
		t.Fatalf("sessions show: %d %s", r.code, r.stderr)
	}
	var out []string
	for _, ev := range events(t, r.stdout) {
		if d, ok := ev.Data.(*loop.RunFinishedData); ok && ev.RunID == runID {
			out = append(out, string(d.Status))
		}
	}
	return out
}

// Hole 7: a server started beside a live CLI run leaves it alone, and a second CLI run
// on the session is refused naming the owner.
func TestE2E_Hole7_LiveCLIRunIsLeftAloneAndExclusive(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", slowSecondTurn})
	lr := e.startLiveRun(t)

	s := e.serve(t)
	if strings.Contains(s.log(), "marked") {
		t.Fatalf("the server aborted a live CLI run:\n%s", s.log())
	}
	if ss := s.session(t, lr.session); ss.Runs[0].Status != "" {
		t.Fatalf("live run stored as %q", ss.Runs[0].Status)
	}
	body := `{"threadId":"` + lr.session + `","runId":"r9","messages":[{"id":"m","role":"user","content":"again"}]}`
	resp, err := http.Post(s.base+"/v1/runs", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 409 || !strings.Contains(string(b), "is being written by pid "+strconv.Itoa(lr.cmd.Process.Pid)) {
		t.Fatalf("served run on the CLI's session: %d %s", resp.StatusCode, b)
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.wait(t)

	r := e.agenthost(t, "run", "--json", "--session", lr.session, "again")
	if r.code != 1 || !strings.Contains(r.stderr, "is being written by pid "+strconv.Itoa(lr.cmd.Process.Pid)) ||
		!strings.Contains(r.stderr, "session already has a run in progress") {
		t.Fatalf("second CLI run on a busy session: exit %d\n%s", r.code, r.stderr)
	}
	if ends := e.storedEnds(t, lr.session, lr.runID); len(ends) != 0 {
		t.Fatalf("the live run was ended: %v", ends)
	}
}

// Hole 7: once a CLI run is SIGKILLed, the next CLI run on its session closes it (once)
// and continues; a later server appends nothing stale.
func TestE2E_Hole7_KilledCLIRunIsClosedOnceByTheNextCLIRun(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", slowSecondTurn})
	lr := e.startLiveRun(t)
	lr.kill(t)
	if err := os.WriteFile(filepath.Join(e.dir, "scripted.json"), []byte(continueTurn), 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.agenthost(t, "run", "--json", "--session", lr.session, "again")
	if r.code != 0 || !strings.Contains(r.stdout, `"text":"Back: 42"`) {
		t.Fatalf("resume after SIGKILL: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if ends := e.storedEnds(t, lr.session, lr.runID); len(ends) != 1 || ends[0] != "aborted" {
		t.Fatalf("the killed run's stored ends: %v", ends)
	}
	s := e.serve(t)
	if strings.Contains(s.log(), "marked") {
		t.Fatalf("a later server recovered again:\n%s", s.log())
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.wait(t)
	if ends := e.storedEnds(t, lr.session, lr.runID); len(ends) != 1 {
		t.Fatalf("the killed run's stored ends after a server: %v", ends)
	}
}

// Hole 7: a SIGKILLed CLI run is closed by the next server, once: a CLI run after it
// does not close it again.
func TestE2E_Hole7_KilledCLIRunIsClosedOnceByTheNextServer(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", slowSecondTurn})
	lr := e.startLiveRun(t)
	lr.kill(t)
	s := e.serve(t)
	if !strings.Contains(s.log(), "agenthost: marked 1 unfinished run(s)") {
		t.Fatalf("the server did not close the dead run:\n%s", s.log())
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.wait(t)
	if err := os.WriteFile(filepath.Join(e.dir, "scripted.json"), []byte(continueTurn), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := e.agenthost(t, "run", "--json", "--session", lr.session, "again"); r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	if ends := e.storedEnds(t, lr.session, lr.runID); len(ends) != 1 || ends[0] != "aborted" {
		t.Fatalf("the killed run's stored ends: %v", ends)
	}
}

// Hole 6: a broken sessions.db is exit 2 with an error naming the file, never a panic,
// for every command that opens the store.
func TestE2E_Hole6_BrokenStoreExits2(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		make       func(path string)
	}{
		{"garbage", "file is not a database", func(p string) { os.WriteFile(p, []byte(strings.Repeat("garbage", 500)), 0o644) }},
		{"directory", "is a directory, not a database file", func(p string) { os.Mkdir(p, 0o755) }},
		{"truncated", "database file is truncated", func(p string) { truncatedDB(t, p) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "hi"}]}`})
			db := filepath.Join(e.dir, "sessions.db")
			tc.make(db)
			for _, args := range [][]string{{"sessions", "list"}, {"run", "hi"}, {"serve", "--addr", "127.0.0.1:0"}} {
				r := e.agenthost(t, args...)
				if r.code != 2 || !strings.Contains(r.stderr, "agenthost: open session store "+db+": ") ||
					!strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "panic") {
					t.Fatalf("%v: exit %d\n%s", args, r.code, r.stderr)
				}
			}
		})
	}
}

// truncatedDB writes a store of many pages and cuts it in half.
func truncatedDB(t *testing.T, path string) {
	s, err := store.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	var es []loop.Entry
	for i := int64(1); i <= 300; i++ {
		m := loop.UserMessage(strings.Repeat("z", 300))
		es = append(es, loop.Entry{Seq: i, RunID: "r", Time: time.Unix(1700000000, 0), Kind: loop.EntryMessage, Message: &m})
	}
	if err := s.Append(context.Background(), "a", es...); err != nil {
		t.Fatal(err)
	}
	s.Close()
	fi, _ := os.Stat(path)
	os.Truncate(path, fi.Size()/2)
}

// An unreadable sessions.db: root reads anything, so as root the CLI runs as nobody.
func TestE2E_Hole6_UnreadableStoreExits2(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "hi"}]}`})
	db := filepath.Join(e.dir, "sessions.db")
	if err := os.WriteFile(db, nil, 0); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", e.manifest, "sessions", "list")
	cmd.Dir = e.dir
	if os.Geteuid() == 0 {
		// Everything the child reads must be reachable for nobody.
		for d := e.dir; d != "/" && d != filepath.Dir(binDir); d = filepath.Dir(d) {
			os.Chmod(d, 0o755)
		}
		os.Chmod(binDir, 0o755)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 ||
		string(out) != "agenthost: open session store "+db+": open "+db+": permission denied\n" {
		t.Fatalf("exit %v\n%s", err, out)
	}
}
