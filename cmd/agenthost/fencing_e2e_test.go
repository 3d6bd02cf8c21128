package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store"
)

// stalledSecondTurn answers the run's second model call a little late: long enough for
// the test to stop the process while the call is open, short enough that the answer is
// waiting for it when it resumes.
const stalledSecondTurn = `{"per_session": true, "turns": [
  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]},
  {"delay_ms": 1500, "text": "too late"}
]}`

// Fencing (issue 29): a CLI run is SIGSTOPped after its tool ran, past its lease
// (AGENTHOST_LEASE_TTL=1s); a second run on the session takes the lease, closes the
// stopped run as aborted and continues. The stopped run, SIGCONTed, gets its model's
// answer and tries to store it and its end: every write is refused (its lease was taken
// over), so the session holds exactly one run_finished for it, and its record says what
// that run_finished says.
func TestE2E_Fencing_RunStoppedPastItsLeaseWritesNothingWhenResumed(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", stalledSecondTurn})
	env := append(os.Environ(), "AGENTHOST_LEASE_TTL=1s")

	zombie := exec.Command(filepath.Join(binDir, "agenthost"), "-c", e.manifest, "run", "--json", "six times seven")
	zombie.Dir, zombie.Env = e.dir, env
	stdout, _ := zombie.StdoutPipe()
	var stderr strings.Builder
	zombie.Stderr = &stderr
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { zombie.Process.Signal(syscall.SIGCONT); zombie.Process.Kill(); zombie.Wait() })
	sc := bufio.NewScanner(stdout)
	var session, runID string
	for session == "" && sc.Scan() {
		var ev loop.Event
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type == loop.EventToolResult {
			session, runID = ev.SessionID, ev.RunID
		}
	}
	if session == "" {
		t.Fatalf("the run ended before its tool result:\n%s", stderr.String())
	}
	stopOutsideAWrite(t, zombie.Process, filepath.Join(e.dir, "sessions.db")) // its model call is open
	rest := make(chan []loop.Event, 1)
	go func() {
		var evs []loop.Event
		for sc.Scan() {
			var ev loop.Event
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				evs = append(evs, ev)
			}
		}
		rest <- evs
	}()

	// A second process takes over once the stopped run's heartbeat is older than 1s.
	if err := os.WriteFile(filepath.Join(e.dir, "scripted.json"), []byte(continueTurn), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := e.run(t, env, "run", "--json", "--session", session, "again")
		if r.code == 0 && strings.Contains(r.stdout, `"text":"Back: 42"`) {
			break
		}
		if !strings.Contains(r.stderr, "is being written by pid") || time.Now().After(deadline) {
			t.Fatalf("the second run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
	}

	if err := zombie.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- zombie.Wait() }()
	select {
	case <-exited:
	case <-time.After(60 * time.Second):
		t.Fatal("the resumed run did not exit")
	}
	<-rest
	if zombie.ProcessState.ExitCode() == 0 || !strings.Contains(stderr.String(), "session lease lost") {
		t.Fatalf("the resumed run: exit %d, want a failure naming the lost lease:\n%s", zombie.ProcessState.ExitCode(), stderr.String())
	}

	st, err := store.OpenSQLite(filepath.Join(e.dir, "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	entries, err := st.Load(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	var ends []loop.Status
	for _, en := range entries {
		if en.Kind == loop.EntryMessage && en.RunID == runID && en.Message.Text() == "too late" {
			t.Fatal("the resumed run stored its model's answer")
		}
		if en.Kind == loop.EntryEvent && en.Event.RunID == runID && en.Event.Type == loop.EventRunFinished {
			ends = append(ends, en.Event.Data.(*loop.RunFinishedData).Status)
		}
	}
	runs, err := st.Runs(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	if len(ends) != 1 || ends[0] != loop.StatusAborted || len(runs) != 2 || runs[0].ID != runID || runs[0].Status != loop.StatusAborted ||
		runs[1].Status != loop.StatusCompleted {
		t.Fatalf("stored ends of the stopped run %v, records %+v: want one aborted end, and the record agreeing", ends, runs)
	}
	if _, held, err := st.Lease(ctx, session); held || err != nil {
		t.Fatalf("a lease is left on the session: %v %v", held, err)
	}
}

// run runs agenthost with env.
func (e *agentEnv) run(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), append([]string{"-c", e.manifest}, args...)...)
	cmd.Dir, cmd.Env = e.dir, env
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{out.String(), errb.String(), code}
}

// stopOutsideAWrite SIGSTOPs p at a moment it holds no SQLite write lock on db. Stopped
// inside a write (a lease heartbeat is one every third of the lease's life), it would
// hold the database's one write lock for as long as it is stopped, and every other
// process, the one the test starts to take over included, would wait for it in vain:
// SQLite's nature, not what the test is about. So the test checks that the database takes
// a write once p is stopped, and if not lets p finish its write and stops it again.
func stopOutsideAWrite(t *testing.T, p *os.Process, db string) {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+db+"?_pragma=busy_timeout(200)")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	probe := func() error { // takes the write lock, waiting for it up to the busy timeout
		tx, err := conn.BeginTx(context.Background(), nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		_, err = tx.Exec(`CREATE TABLE IF NOT EXISTS stop_probe (x)`)
		return err
	}
	for attempt := 0; ; attempt++ {
		if err := p.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		err := probe()
		if err == nil {
			return
		}
		if attempt == 20 {
			t.Fatalf("the stopped process holds the database's write lock at every try: %v", err)
		}
		if err := p.Signal(syscall.SIGCONT); err != nil { // let it finish its write
			t.Fatal(err)
		}
		_ = probe() // returns once its write has let go of the lock
	}
}
