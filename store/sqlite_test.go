package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/loop/looptest"
)

func open(t *testing.T) *SQLite {
	t.Helper()
	s, err := OpenSQLite(filepath.Join(t.TempDir(), "sub", "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func msgEntry(seq int64, text string) loop.Entry {
	m := loop.UserMessage(text)
	return loop.Entry{Seq: seq, RunID: "r1", Time: time.Unix(1700000000+seq, 0).UTC(), Kind: loop.EntryMessage, Message: &m}
}

func TestAppendLoadRoundTripsEveryKind(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	ev := loop.Event{Seq: 3, Time: time.Unix(1700000000, 5).UTC(), SessionID: "a", RunID: "r1", Agent: "x", Type: loop.EventToolCall,
		Data: &loop.ToolCallData{ID: "c1", Name: "calc", Arguments: json.RawMessage(`{"_raw":"x"}`)}}
	comp := &loop.Compaction{Replace: 1, Summary: []loop.Message{loop.UserMessage("note")}}
	want := []loop.Entry{
		msgEntry(1, "hello"),
		{Seq: 2, RunID: "r1", Time: time.Unix(1700000002, 0).UTC(), Kind: loop.EntryCompaction, Compaction: comp},
		{Seq: 3, RunID: "r1", Time: ev.Time, Kind: loop.EntryEvent, Event: &ev},
	}
	if err := s.Append(ctx, "a", want[:2]...); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "a", want[2]); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(want)
	if string(a) != string(b) {
		t.Fatalf("round trip:\n got  %s\n want %s", a, b)
	}
	if _, ok := got[2].Event.Data.(*loop.ToolCallData); !ok {
		t.Fatalf("event data decoded as %T", got[2].Event.Data)
	}
	if other, _ := s.Load(ctx, "b"); len(other) != 0 {
		t.Fatalf("session b has %d entries", len(other))
	}
}

func TestAppendRefusesGapsAndDuplicates(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	if err := s.Append(ctx, "a", msgEntry(1, "x")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		batch []loop.Entry
		want  string
	}{
		{[]loop.Entry{msgEntry(1, "dup")}, `session "a": append seq 1, want 2 (another run writing?)`},
		{[]loop.Entry{msgEntry(3, "gap")}, `session "a": append seq 3, want 2 (another run writing?)`},
		{[]loop.Entry{msgEntry(2, "ok"), msgEntry(4, "gap")}, `session "a": append seq 4, want 3 (another run writing?)`},
	} {
		if err := s.Append(ctx, "a", tc.batch...); err == nil || err.Error() != tc.want {
			t.Fatalf("got %v, want %q", err, tc.want)
		}
	}
	// The failed batches left nothing behind (one transaction each).
	if got, _ := s.Load(ctx, "a"); len(got) != 1 {
		t.Fatalf("%d entries after refused appends, want 1", len(got))
	}
}

func TestRunsSessionsAndKV(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	start := time.Unix(1700000000, 0).UTC()
	r := loop.RunRecord{ID: "r1", SessionID: "a", Started: start}
	if err := s.SaveRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	r.Status, r.Reason, r.Ended, r.Usage = loop.StatusCompleted, loop.ReasonEndTurn, start.Add(time.Second), loop.Usage{PromptTokens: 3, TotalTokens: 3, CostUSD: 0.25}
	if err := s.SaveRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	runs, err := s.Runs(ctx, "a")
	if err != nil || len(runs) != 1 || runs[0] != r {
		t.Fatalf("runs = %+v, %v; want [%+v]", runs, err, r)
	}
	s.Append(ctx, "a", msgEntry(1, "x"), msgEntry(2, "y"))
	s.Append(ctx, "b", msgEntry(1, "z"))
	ss, err := s.Sessions(ctx)
	if err != nil || len(ss) != 2 || ss[0].ID != "a" || ss[0].Entries != 2 || ss[0].Runs != 1 || ss[1].ID != "b" || ss[1].Runs != 0 {
		t.Fatalf("sessions = %+v, %v", ss, err)
	}
	if _, ok, _ := s.KVGet(ctx, "p", "k"); ok {
		t.Fatal("empty kv has k")
	}
	s.KVSet(ctx, "p", "k", []byte("v1"))
	s.KVSet(ctx, "p", "k", []byte("v2"))
	s.KVSet(ctx, "q", "k", []byte("other"))
	if v, ok, err := s.KVGet(ctx, "p", "k"); !ok || string(v) != "v2" || err != nil {
		t.Fatalf("kv = %q %v %v", v, ok, err)
	}
	s.KVDelete(ctx, "p", "k")
	if _, ok, _ := s.KVGet(ctx, "p", "k"); ok {
		t.Fatal("deleted key still there")
	}
	if v, _, _ := s.KVGet(ctx, "q", "k"); string(v) != "other" {
		t.Fatal("delete crossed plugins")
	}
}

// The crash test re-runs this test binary as a writer that appends batches until it is
// killed with SIGKILL; the store it leaves must be a gapless, decodable prefix.
const writerEnv = "AGENTHOST_STORE_CRASH_WRITER"

func TestMain(m *testing.M) {
	if path := os.Getenv(writerEnv); path != "" {
		crashWriter(path)
		return
	}
	if path := os.Getenv(unreadableEnv); path != "" {
		openUnreadable(path)
		return
	}
	if spec := os.Getenv(holderEnv); spec != "" {
		leaseHolder(spec)
		return
	}
	os.Exit(m.Run())
}

func crashWriter(path string) {
	s, err := OpenSQLite(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	ctx := context.Background()
	seq := int64(0)
	for batch := 0; ; batch++ {
		var es []loop.Entry
		for i := 0; i < 5; i++ {
			seq++
			es = append(es, msgEntry(seq, "batch "+strconv.Itoa(batch)))
		}
		if err := s.Append(ctx, "crash", es...); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(4)
		}
		if batch == 20 {
			fmt.Println("ready") // the parent kills us some time after this
		}
	}
}

func TestSIGKILLLeavesAConsistentStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crash.db")
	for round := 0; round < 3; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), writerEnv+"="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 6)
		if _, err := out.Read(buf); err != nil || string(buf) != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("writer did not start: %q %v", buf, err)
		}
		time.Sleep(time.Duration(round*7) * time.Millisecond) // kill at different points
		cmd.Process.Kill()
		cmd.Wait()

		s, err := OpenSQLite(path)
		if err != nil {
			t.Fatal(err)
		}
		es, err := s.Load(context.Background(), "crash")
		s.Close()
		if err != nil {
			t.Fatalf("round %d: load after kill: %v", round, err)
		}
		if len(es) == 0 || len(es)%5 != 0 {
			t.Fatalf("round %d: %d entries: a batch was half written", round, len(es))
		}
		for i, e := range es {
			if e.Seq != int64(i+1) || e.Message == nil {
				t.Fatalf("round %d: entry %d = %+v", round, i, e)
			}
		}
		// Start the next round from an empty session: the writer numbers from 1.
		s, _ = OpenSQLite(path)
		s.db.Exec(`DELETE FROM entries`)
		s.Close()
	}
}

// A loop run on the SQLite store, then a second run on the same session from a fresh
// store handle: history and events survive, as the loop wrote them.
func TestLoopRunsOnTheStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	a, err := loop.New(loop.Config{Name: "t", SystemPrompt: "sys", Model: looptest.NewModel(looptest.Turn{Text: "echo: ping"}), Store: s})
	if err != nil {
		t.Fatal(err)
	}
	var live []loop.Event
	res, err := a.RunWith(context.Background(), loop.RunInput{SessionID: "x", Messages: []loop.Message{loop.UserMessage("ping")}},
		func(e loop.Event) {
			if e.Type != loop.EventModelDelta {
				live = append(live, e)
			}
		})
	if err != nil || res.Final.Text() != "echo: ping" {
		t.Fatalf("run: %v %+v", err, res)
	}
	s.Close()
	s2, _ := OpenSQLite(path)
	defer s2.Close()
	es, _ := s2.Load(context.Background(), "x")
	var stored []loop.Event
	var msgs []string
	for _, e := range es {
		if e.Kind == loop.EntryEvent {
			stored = append(stored, *e.Event)
		} else {
			msgs = append(msgs, string(e.Message.Role)+":"+e.Message.Text())
		}
	}
	if fmt.Sprint(msgs) != "[system:sys user:ping assistant:echo: ping]" {
		t.Fatalf("messages %v", msgs)
	}
	a1, _ := json.Marshal(stored)
	a2, _ := json.Marshal(live)
	if string(a1) != string(a2) {
		t.Fatalf("stored events differ from live:\n%s\n%s", a1, a2)
	}
	runs, _ := s2.Runs(context.Background(), "x")
	if len(runs) != 1 || runs[0].Status != loop.StatusCompleted {
		t.Fatalf("runs %+v", runs)
	}
}

// Concurrent runs on different sessions append at once; each append reads the last seq
// and then writes, so a deferred transaction would fail with SQLITE_BUSY on the upgrade
// instead of waiting (found by the surface/server load test). Immediate transactions wait.
func TestConcurrentAppendsOnManySessionsAllSucceed(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	errs := make(chan error, 64*5)
	done := make(chan struct{})
	for g := range 64 {
		go func() {
			defer func() { done <- struct{}{} }()
			for seq := int64(1); seq <= 5; seq++ {
				if err := s.Append(ctx, fmt.Sprintf("s%d", g), msgEntry(seq, "x")); err != nil {
					errs <- err
				}
			}
		}()
	}
	for range 64 {
		<-done
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	ss, err := s.Sessions(ctx)
	if err != nil || len(ss) != 64 {
		t.Fatalf("%d sessions, %v", len(ss), err)
	}
}
