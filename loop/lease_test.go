package loop

import (
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// answerModel answers every call with one text; gate, when set, holds each call until
// it is closed (or the run ends).
type answerModel struct {
	gate    chan struct{}
	started chan struct{}
}

func (m answerModel) Stream(ctx context.Context, _ Request) (Stream, error) {
	if m.started != nil {
		m.started <- struct{}{}
	}
	if m.gate != nil {
		select {
		case <-m.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &answerStream{deltas: []Delta{{Kind: DeltaText, Text: "ok"}, {Kind: DeltaFinish, StopReason: "end_turn"}}}, nil
}

type answerStream struct{ deltas []Delta }

func (s *answerStream) Recv() (Delta, error) {
	if len(s.deltas) == 0 {
		return Delta{}, io.EOF
	}
	d := s.deltas[0]
	s.deltas = s.deltas[1:]
	return d, nil
}
func (s *answerStream) Close() error { return nil }

func leaseAgent(t *testing.T, st SessionStore, m Model) *Agent {
	t.Helper()
	a, err := New(Config{Name: "t", Model: m, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func userInput(session, run string) RunInput {
	return RunInput{SessionID: session, RunID: run, Messages: []Message{UserMessage("hi")}}
}

// Two Agents on one store (as two processes on one file): the second is refused while
// the first run holds the session's lease, and takes it once the run ended.
func TestLeaseRefusesASecondWriterOnTheSession(t *testing.T) {
	st := NewMemoryStore()
	m := answerModel{gate: make(chan struct{}), started: make(chan struct{}, 1)}
	done := make(chan error, 1)
	go func() { _, err := leaseAgent(t, st, m).Run(context.Background(), userInput("s", "r1")); done <- err }()
	<-m.started
	_, err := leaseAgent(t, st, answerModel{}).Run(context.Background(), userInput("s", "r2"))
	if !errors.Is(err, ErrSessionBusy) || !strings.Contains(err.Error(), `session "s" is being written by pid `+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second writer: %v", err)
	}
	close(m.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := leaseAgent(t, st, answerModel{}).Run(context.Background(), userInput("s", "r2")); err != nil {
		t.Fatalf("after the first run ended: %v", err)
	}
	if len(st.leases) != 0 {
		t.Fatalf("leases left: %+v", st.leases)
	}
}

func TestRunIDIsRefusedOnlyOnItsOwnSession(t *testing.T) {
	st := NewMemoryStore()
	a := leaseAgent(t, st, answerModel{})
	if _, err := a.Run(context.Background(), userInput("a", "r1")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), userInput("b", "r1")); err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), userInput("a", "r1"))
	if !errors.Is(err, ErrRunExists) || res.Status != StatusFailed {
		t.Fatalf("reused id: %v %v", res.Status, err)
	}
	if _, busy := a.sessions["a"]; busy || len(st.leases) != 0 {
		t.Fatal("a refused run kept its session")
	}
}

// deadPID is a pid no process has: the lowest unused above our own is found by probing.
func deadPID(t *testing.T) int {
	for pid := os.Getpid() + 100000; pid < os.Getpid()+200000; pid++ {
		if !pidAlive(pid) {
			return pid
		}
	}
	t.Fatal("no free pid")
	return 0
}

// openRun stores what a process killed mid-run leaves: a run record without status, its
// first event, and its lease.
func openRun(t *testing.T, st *MemoryStore, session, run string, l Lease) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	st.SaveRun(ctx, RunRecord{ID: run, SessionID: session, Started: now})
	have, _ := st.Load(ctx, session)
	ev := &Event{Seq: 1, Time: now, SessionID: session, RunID: run, Agent: "t", Type: EventRunStarted, Data: &RunStartedData{}}
	if err := st.Append(ctx, session, Entry{Seq: int64(len(have)) + 1, RunID: run, Time: now, Kind: EntryEvent, Event: ev}); err != nil {
		t.Fatal(err)
	}
	l.SessionID, l.RunID = session, run
	if _, err := st.AcquireLease(ctx, l, func(Lease) bool { return false }); err != nil {
		t.Fatal(err)
	}
}

func ends(st *MemoryStore, session, run string) []RunFinishedData {
	es, _ := st.Load(context.Background(), session)
	var out []RunFinishedData
	for _, e := range es {
		if e.Event != nil && e.Event.RunID == run && e.Event.Type == EventRunFinished {
			out = append(out, *e.Event.Data.(*RunFinishedData))
		}
	}
	return out
}

func TestRecoverRunsClosesOnlyDeadRunsOnce(t *testing.T) {
	st := NewMemoryStore()
	ctx := context.Background()
	now := time.Now()
	openRun(t, st, "dead-pid", "r", Lease{PID: deadPID(t), Host: hostName, Instance: "x", Heartbeat: now})
	openRun(t, st, "expired", "r", Lease{PID: os.Getpid(), Host: "elsewhere", Instance: "y", Heartbeat: now.Add(-LeaseTTL - time.Second)})
	openRun(t, st, "live", "r", Lease{PID: os.Getpid(), Host: hostName, Instance: "z", Heartbeat: now})
	openRun(t, st, "other-host", "r", Lease{PID: deadPID(t), Host: "elsewhere", Instance: "w", Heartbeat: now})
	for i, want := range []int{2, 0} {
		if n, err := RecoverRuns(ctx, st); n != want || err != nil {
			t.Fatalf("recovery %d: %d %v, want %d", i, n, err, want)
		}
	}
	for session, want := range map[string]int{"dead-pid": 1, "expired": 1, "live": 0, "other-host": 0} {
		e := ends(st, session, "r")
		if len(e) != want || (want == 1 && (e[0].Status != StatusAborted || e[0].Reason != ReasonCancelled)) {
			t.Errorf("%s: ends %+v, want %d", session, e, want)
		}
	}
	runs, _ := st.Runs(ctx, "dead-pid")
	if runs[0].Status != StatusAborted || runs[0].Ended.IsZero() {
		t.Fatalf("dead run record: %+v", runs[0])
	}
	if _, held := st.leases["dead-pid"]; held {
		t.Fatal("recovery kept the lease")
	}
}

// A run starting on a session whose previous run died closes it first, once.
func TestRunClosesTheDeadRunItResumes(t *testing.T) {
	st := NewMemoryStore()
	openRun(t, st, "s", "dead", Lease{PID: deadPID(t), Host: hostName, Instance: "x", Heartbeat: time.Now()})
	a := leaseAgent(t, st, answerModel{})
	if _, err := a.Run(context.Background(), userInput("s", "next")); err != nil {
		t.Fatal(err)
	}
	if e := ends(st, "s", "dead"); len(e) != 1 || e[0].Status != StatusAborted {
		t.Fatalf("dead run ends: %+v", e)
	}
	if n, _ := RecoverRuns(context.Background(), st); n != 0 {
		t.Fatalf("recovery after the resume closed %d", n)
	}
}

// plainStore hides MemoryStore's optional interfaces.
type plainStore struct{ SessionStore }

func TestStoresWithoutExtensions(t *testing.T) {
	st := plainStore{NewMemoryStore()}
	if _, err := ListSessions(context.Background(), st); !errors.Is(err, ErrCannotList) {
		t.Fatalf("list: %v", err)
	}
	if n, err := RecoverRuns(context.Background(), st); n != 0 || err != nil {
		t.Fatalf("recover: %d %v", n, err)
	}
	// Without leases runs still work, and run ids are still per session.
	a := leaseAgent(t, st, answerModel{})
	if _, err := a.Run(context.Background(), userInput("s", "r")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), userInput("s", "r")); !errors.Is(err, ErrRunExists) {
		t.Fatalf("reused id without leases: %v", err)
	}
}

func TestMemoryStoreListsSessionsNewestFirst(t *testing.T) {
	st := NewMemoryStore()
	ctx := context.Background()
	for i, s := range []string{"old", "new"} {
		m := UserMessage(s)
		st.Append(ctx, s, Entry{Seq: 1, Time: time.Unix(int64(1700000000+i), 0), Kind: EntryMessage, Message: &m})
	}
	st.SaveRun(ctx, RunRecord{ID: "r", SessionID: "old"})
	ss, err := ListSessions(ctx, st)
	if err != nil || len(ss) != 2 || ss[0].ID != "new" || ss[1].ID != "old" || ss[1].Runs != 1 || ss[1].Entries != 1 {
		t.Fatalf("sessions: %+v %v", ss, err)
	}
}

func TestLeaseLostRenewalAndRelease(t *testing.T) {
	st := NewMemoryStore()
	ctx := context.Background()
	l := newLease("s", "r")
	if _, err := st.AcquireLease(ctx, l, func(Lease) bool { return true }); err != nil {
		t.Fatal(err)
	}
	other := l
	other.Instance = "other"
	if err := st.RenewLease(ctx, other); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("renew by a stranger: %v", err)
	}
	if err := st.ReleaseLease(ctx, other); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("release by a stranger: %v", err)
	}
	if err := st.RenewLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(l.String(), "pid "+strconv.Itoa(os.Getpid())+" on "+hostName+` (run "r"`) {
		t.Fatalf("lease text %q", l.String())
	}
}

// A live run renews its heartbeat; when another process takes the session anyway (it
// judged the lease dead), the run is aborted instead of writing beside it, and its end
// is not stored either (fencing: the session is the new owner's).
func TestRenewalKeepsTheLeaseAndALostLeaseAbortsTheRun(t *testing.T) {
	defer func(d time.Duration) { renewEvery = d }(renewEvery)
	renewEvery = time.Millisecond
	st := NewMemoryStore()
	m := answerModel{gate: make(chan struct{}), started: make(chan struct{}, 1)}
	done := make(chan RunResult, 1)
	go func() { res, _ := leaseAgent(t, st, m).Run(context.Background(), userInput("s", "r1")); done <- res }()
	<-m.started
	st.mu.Lock()
	first := st.leases["s"].Heartbeat
	st.mu.Unlock()
	for {
		st.mu.Lock()
		hb := st.leases["s"].Heartbeat
		st.mu.Unlock()
		if hb.After(first) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	thief := newLease("s", "thief")
	thief.Instance = "another-process"
	if _, err := st.AcquireLease(context.Background(), thief, func(Lease) bool { return false }); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.Status != StatusFailed || !errors.Is(res.Err, ErrLeaseLost) {
		t.Fatalf("run after losing its lease: %v %v, want its end refused", res.Status, res.Err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, e := range st.sessions["s"] {
		if e.Kind == EntryEvent && e.Event.Type == EventRunFinished {
			t.Fatalf("the run stored its end after losing its lease: %+v", e.Event.Data)
		}
	}
	if rs := st.runs["s"]; len(rs) != 1 || rs[0].Status != "" {
		t.Fatalf("the run saved its record after losing its lease: %+v", rs)
	}
	if st.leases["s"].RunID != "thief" {
		t.Fatal("the aborted run released the thief's lease")
	}
}
