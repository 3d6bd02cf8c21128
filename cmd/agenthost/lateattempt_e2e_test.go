package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agenthost/agenthost/loop"
)

// jobOf reads the latest River job of a run (state and attempt), straight from the
// cluster's database.
func jobOf(t *testing.T, runID string) (state string, attempt int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, os.Getenv("AGENTHOST_TEST_PG"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	err = conn.QueryRow(ctx, `SELECT state, attempt FROM river_job WHERE args->>'run' = $1 ORDER BY id DESC LIMIT 1`, runID).Scan(&state, &attempt)
	if err != nil && err != pgx.ErrNoRows {
		t.Fatal(err)
	}
	return state, attempt
}

// Issue 47, the SIGSTOP case: worker B is stopped mid-run past its lease and its job's
// time; River hands the job to C. B is continued while C's attempt runs: B's job time
// is over, and River lets the end B reports (a retry) overwrite the state of the job C
// runs. C completes the run; River runs the job a third time. That attempt finds the
// run's end in the store and completes the job without touching the session: no run
// ~3 is stored (it used to be, "failed": "no input messages and nothing pending"), and
// nothing B wrote after it was taken over.
func TestE2E_ALateAttemptAfterTheRunEndedCompletesItsJobWithoutTouchingTheSession(t *testing.T) {
	t.Setenv("AGENTHOST_LEASE_TTL", "1s") // every process below: the paused worker's lease dies fast
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "fetched")
	}))
	defer srv.Close()
	args, _ := json.Marshal(map[string]string{"url": srv.URL})
	fixture, _ := json.Marshal(map[string]any{"turns": []any{
		map[string]any{"tool_calls": []any{map[string]string{"id": "g1", "name": "http_get", "arguments": string(args)}}},
		map[string]any{"expect": map[string]string{"last_role": "tool"}, "text": "too late", "delay_ms": 6000},
	}})
	e := clusterEnv(t, "", [2]string{"scripted", string(fixture)},
		[2]string{"rescuer", `{"turns": [{"expect": {"last_role": "tool"}, "text": "Done after the rescue: {{result g1}}.", "delay_ms": 4000}]}`})
	a := e.serve(t, "--workers", "0")
	b := e.serve(t, "--workers", "1", "--rescue-after", "2s")
	t.Cleanup(func() { b.cmd.Process.Signal(syscall.SIGCONT) })

	run := startSSE(t, post(t, a.base+"/v1/runs", `{"threadId":"p2","runId":"rl","messages":[{"id":"u1","role":"user","content":"fetch it"}]}`))
	// Stored by B; B's model call is open. Its answer takes 6 s: the stream relays the
	// result late on a loaded machine (1.5 s was once not enough, and B finished the run
	// before it was stopped), and the answer must still reach B before C's attempt,
	// which starts about 20 s after B's (B is stopped; C, leader once B's leadership
	// lapses, rescues jobs older than 10 s).
	run.until(t, "TOOL_CALL_RESULT")
	if err := b.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	c := e.serve(t, "--workers", "1", "--provider", "rescuer", "--rescue-after", "10s")
	deadline := time.Now().Add(readyBound)
	for { // C runs the second attempt (its model answers after 4 s)
		if state, attempt := jobOf(t, "rl"); state == "running" && attempt >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no second attempt\nC:\n%s", c.log())
		}
		time.Sleep(50 * time.Millisecond) // polling, bounded by the deadline
	}
	if err := b.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	fin := run.until(t, "RUN_FINISHED")
	if res := fin["result"].(map[string]any); res["status"] != "completed" || res["text"] != "Done after the rescue: fetched." {
		t.Fatalf("run after the rescue: %v\nevents %v", fin, types(run.all))
	}
	for { // River runs the job a third time, and that attempt completes it
		state, attempt := jobOf(t, "rl")
		if state == "completed" && attempt >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job is %s after attempt %d\nB:\n%s\nC:\n%s", state, attempt, b.log(), c.log())
		}
		time.Sleep(50 * time.Millisecond) // polling, bounded by the deadline
	}

	sess := e.agenthost(t, "sessions", "show", "--json", "p2")
	if sess.code != 0 {
		t.Fatalf("sessions show: %d %s", sess.code, sess.stderr)
	}
	if strings.Contains(sess.stdout, "too late") {
		t.Fatalf("the resumed worker's late answer was stored:\n%s", sess.stdout)
	}
	ends := map[string][]string{}
	for _, ev := range events(t, sess.stdout) {
		if ev.Type == loop.EventRunStarted {
			ends[ev.RunID] = ends[ev.RunID][:0:0]
		}
		if d, ok := ev.Data.(*loop.RunFinishedData); ok {
			ends[ev.RunID] = append(ends[ev.RunID], string(d.Status))
		}
	}
	if len(ends) != 2 || fmt.Sprint(ends["rl"]) != "[aborted]" || fmt.Sprint(ends["rl~2"]) != "[completed]" {
		t.Fatalf("stored runs %v, want rl aborted (the paused attempt), rl~2 completed and nothing else", ends)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want once", n)
	}
	if late := "the run has ended: its job completes without touching the session"; !strings.Contains(b.log()+c.log(), late) {
		t.Fatalf("the late attempt was not reported\nB:\n%s\nC:\n%s", b.log(), c.log())
	}
}

// Issue 47, the abort case: one run id on two threads; the run on x1 has ended, the one
// on x2 is live. River had not marked x1's job completed yet (it does so after the
// worker returns, asynchronously; here its state is held at running), and the abort
// that names only the run id answered 409, "in progress on sessions x1, x2". The stored
// runs decide: the abort reaches the live run on x2, and an abort of x1's ended run finds
// nothing in progress.
func TestE2E_AbortReadsTheRunsStoredStateNotItsJobs(t *testing.T) {
	e := clusterEnv(t, "", [2]string{"scripted", `{"stories": [
	  {"when": "quick", "turns": [{"text": "done"}]},
	  {"when": "slow", "turns": [{"text": "too late", "delay_ms": 60000}]}]}`})
	a := e.serve(t, "--workers", "0")
	e.serve(t, "--workers", "2")

	quick := startSSE(t, post(t, a.base+"/v1/runs", `{"threadId":"x1","runId":"ra","messages":[{"id":"u1","role":"user","content":"quick"}]}`))
	if fin := quick.until(t, "RUN_FINISHED"); fin["result"].(map[string]any)["status"] != "completed" {
		t.Fatalf("x1's run: %v", fin)
	}
	slow := startSSE(t, post(t, a.base+"/v1/runs", `{"threadId":"x2","runId":"ra","messages":[{"id":"u1","role":"user","content":"slow"}]}`))
	slow.until(t, "RUN_STARTED")
	// x1's job as River may still show it for a moment after its run ended.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, os.Getenv("AGENTHOST_TEST_PG"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if tag, err := conn.Exec(ctx, `UPDATE river_job SET state = 'running', finalized_at = NULL WHERE args->>'session' = 'x1' AND args->>'run' = 'ra'`); err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("hold x1's job running: %v %v", tag, err)
	}

	abort := func(path string) (int, string) {
		resp := post(t, a.base+path, `{}`)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	if code, body := abort("/v1/sessions/x1/runs/ra/abort"); code != http.StatusNotFound {
		t.Fatalf("abort of x1's ended run: %d %s, want 404", code, body)
	}
	if code, body := abort("/v1/runs/ra/abort"); code != http.StatusAccepted {
		t.Fatalf("abort of run ra (live only on x2): %d %s, want 202", code, body)
	}
	fin := slow.until(t, "RUN_FINISHED")
	if oc := fin["outcome"].(map[string]any); oc["type"] != "cancelled" {
		t.Fatalf("x2's run after the abort: %v", fin)
	}
	if ends := e.storedEnds(t, "x1", "ra"); fmt.Sprint(ends) != "[completed]" {
		t.Fatalf("x1's stored ends: %v", ends)
	}
}
