package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/loop/looptest"
)

// Hole 7: sessions shared between processes. A helper process (this test binary again)
// starts a run on a session of a shared SQLite file and blocks in its model call; the
// parent then recovers, runs and kills it as a server or a second CLI would.
const holderEnv = "AGENTHOST_STORE_LEASE_HOLDER" // path|session|run

func leaseHolder(spec string) {
	parts := strings.SplitN(spec, "|", 3)
	s, err := OpenSQLite(parts[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	started := make(chan struct{}, 1)
	m := looptest.NewModel(looptest.Turn{Hang: true, Started: started})
	a, err := loop.New(loop.Config{Name: "holder", Model: m, Store: s})
	if err != nil {
		os.Exit(3)
	}
	go func() { <-started; fmt.Println("ready") }()
	_, err = a.Run(context.Background(), loop.RunInput{SessionID: parts[1], RunID: parts[2], Messages: []loop.Message{loop.UserMessage("hold")}})
	fmt.Fprintln(os.Stderr, "holder run ended:", err)
	os.Exit(4)
}

// startHolder starts a helper process holding session with a live run.
func startHolder(t *testing.T, path, session, run string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holderEnv+"="+path+"|"+session+"|"+run)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		t.Fatalf("holder did not start: %q %v", line, err)
	}
	return cmd
}

func killHolder(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no chance to store anything
		t.Fatal(err)
	}
	cmd.Wait() // reaped: a zombie would still answer kill(pid, 0)
}

func newAgent(t *testing.T, st loop.SessionStore, text string) *loop.Agent {
	t.Helper()
	a, err := loop.New(loop.Config{Name: "parent", Model: looptest.NewModel(looptest.Turn{Text: text}).Repeat(), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// finishedEvents counts the stored run_finished events of a run.
func finishedEvents(t *testing.T, s *SQLite, session, run string) []loop.RunFinishedData {
	t.Helper()
	es, err := s.Load(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	var out []loop.RunFinishedData
	for _, e := range es {
		if e.Kind == loop.EntryEvent && e.Event.RunID == run && e.Event.Type == loop.EventRunFinished {
			out = append(out, *e.Event.Data.(*loop.RunFinishedData))
		}
	}
	return out
}

func runStatus(t *testing.T, s *SQLite, session, run string) loop.Status {
	t.Helper()
	runs, err := s.Runs(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.ID == run {
			return r.Status
		}
	}
	t.Fatalf("no run %q on session %q", run, session)
	return ""
}

func TestHole7_RecoveryLeavesALiveProcesssRunAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	holder := startHolder(t, path, "s1", "live")
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n, err := loop.RecoverRuns(context.Background(), s)
	if err != nil || n != 0 {
		t.Fatalf("recovery beside a live run ended %d runs (%v), want 0", n, err)
	}
	if st := runStatus(t, s, "s1", "live"); st != "" {
		t.Fatalf("the live run was marked %q", st)
	}
	if f := finishedEvents(t, s, "s1", "live"); len(f) != 0 {
		t.Fatalf("recovery stored run_finished for a live run: %+v", f)
	}
	if l, ok, _ := s.Lease(context.Background(), "s1"); !ok || l.PID != holder.Process.Pid || l.RunID != "live" {
		t.Fatalf("lease = %+v %v, want the holder's (pid %d)", l, ok, holder.Process.Pid)
	}
}

func TestHole7_SecondWriterOnABusySessionIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	holder := startHolder(t, path, "s1", "live")
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before, _ := s.Load(context.Background(), "s1")
	_, err = newAgent(t, s, "hi").Run(context.Background(), loop.RunInput{SessionID: "s1", Messages: []loop.Message{loop.UserMessage("x")}})
	if !errors.Is(err, loop.ErrSessionBusy) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(holder.Process.Pid)) {
		t.Fatalf("second writer: %v; want ErrSessionBusy naming pid %d", err, holder.Process.Pid)
	}
	after, _ := s.Load(context.Background(), "s1")
	if len(after) != len(before) {
		t.Fatalf("the refused run wrote %d entries", len(after)-len(before))
	}
	// Another session of the same file is free.
	if _, err := newAgent(t, s, "hi").Run(context.Background(), loop.RunInput{SessionID: "s2", Messages: []loop.Message{loop.UserMessage("x")}}); err != nil {
		t.Fatal(err)
	}
}

func TestHole7_KilledRunIsClosedOnceByTheNextRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	killHolder(t, startHolder(t, path, "s1", "dead"))
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := newAgent(t, s, "resumed").Run(context.Background(), loop.RunInput{SessionID: "s1", RunID: "next", Messages: []loop.Message{loop.UserMessage("again")}})
	if err != nil || res.Status != loop.StatusCompleted {
		t.Fatalf("resume after a killed run: %v %v", res.Status, err)
	}
	f := finishedEvents(t, s, "s1", "dead")
	if len(f) != 1 || f[0].Status != loop.StatusAborted || f[0].Reason != loop.ReasonCancelled || runStatus(t, s, "s1", "dead") != loop.StatusAborted {
		t.Fatalf("the dead run's end: %+v, status %q", f, runStatus(t, s, "s1", "dead"))
	}
	// A later server finds nothing to recover and appends nothing stale.
	n, err := loop.RecoverRuns(context.Background(), s)
	if err != nil || n != 0 || len(finishedEvents(t, s, "s1", "dead")) != 1 {
		t.Fatalf("recovery after the resume ended %d runs (%v)", n, err)
	}
	if _, ok, _ := s.Lease(context.Background(), "s1"); ok {
		t.Fatal("the finished run kept its lease")
	}
}

func TestHole7_KilledRunIsClosedOnceByTheNextServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	killHolder(t, startHolder(t, path, "s1", "dead"))
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, want := range []int{1, 0} {
		n, err := loop.RecoverRuns(context.Background(), s)
		if err != nil || n != want {
			t.Fatalf("recovery %d ended %d runs (%v), want %d", i, n, err, want)
		}
	}
	if f := finishedEvents(t, s, "s1", "dead"); len(f) != 1 || f[0].Status != loop.StatusAborted {
		t.Fatalf("the dead run's end: %+v", f)
	}
	// The next run continues the session without closing it again.
	if _, err := newAgent(t, s, "ok").Run(context.Background(), loop.RunInput{SessionID: "s1", Messages: []loop.Message{loop.UserMessage("again")}}); err != nil {
		t.Fatal(err)
	}
	if f := finishedEvents(t, s, "s1", "dead"); len(f) != 1 {
		t.Fatalf("run_finished stored %d times for the dead run", len(f))
	}
}

// A lease whose heartbeat is older than LeaseTTL is dead even though its pid (ours) lives.
func TestHole7_ExpiredHeartbeatIsDead(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	stale := loop.Lease{SessionID: "s", RunID: "old", PID: os.Getpid(), Host: "elsewhere", Instance: "x", Heartbeat: time.Now().Add(-2 * loop.LeaseTTL)}
	alive := func(l loop.Lease) bool { return l.Alive(time.Now()) }
	if _, err := s.AcquireLease(ctx, stale, alive); err != nil {
		t.Fatal(err)
	}
	fresh := stale
	fresh.RunID, fresh.Instance, fresh.Heartbeat = "new", "y", time.Now()
	held, err := s.AcquireLease(ctx, fresh, alive)
	if err != nil || held.RunID != "old" {
		t.Fatalf("taking an expired lease: %+v %v", held, err)
	}
	other := fresh
	other.RunID, other.Instance = "third", "z"
	if held, err := s.AcquireLease(ctx, other, alive); !errors.Is(err, loop.ErrSessionBusy) || held.RunID != "new" {
		t.Fatalf("taking a live lease: %+v %v", held, err)
	}
	// The replaced owner learns it lost the session.
	if err := s.RenewLease(ctx, stale); !errors.Is(err, loop.ErrLeaseLost) {
		t.Fatalf("renew of a replaced lease: %v", err)
	}
	if err := s.ReleaseLease(ctx, stale); !errors.Is(err, loop.ErrLeaseLost) {
		t.Fatalf("release of a replaced lease: %v", err)
	}
	if l, _, _ := s.Lease(ctx, "s"); l.RunID != "new" {
		t.Fatalf("a stale owner's release removed %+v", l)
	}
}

// Two processes starting a run on one free session at the same moment: the lease is
// read and written in one IMMEDIATE transaction, so exactly one runs and the other is
// refused with ErrSessionBusy.
func TestHole7_TwoProcessesRacingForOneSession(t *testing.T) {
	for round := 0; round < 3; round++ {
		path := filepath.Join(t.TempDir(), "sessions.db")
		s, err := OpenSQLite(path) // created (and migrated) once, so both race on the lease only
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		type outcome struct {
			ready bool
			err   string
		}
		results := make(chan outcome, 2)
		for i := range 2 {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), holderEnv+"="+path+"|s1|run"+strconv.Itoa(i))
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			go func() {
				line, _ := bufio.NewReader(out).ReadString('\n')
				if line == "ready\n" {
					results <- outcome{ready: true}
					return
				}
				cmd.Wait()
				results <- outcome{err: stderr.String()}
			}()
		}
		a, b := <-results, <-results
		if a.ready == b.ready {
			t.Fatalf("round %d: both ready=%v (%q %q)", round, a.ready, a.err, b.err)
		}
		refused := a.err + b.err
		if !strings.Contains(refused, "session already has a run in progress") || !strings.Contains(refused, `session "s1" is being written by pid`) {
			t.Fatalf("round %d: the loser said %q", round, refused)
		}
	}
}
