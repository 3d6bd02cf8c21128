package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/pgtest"
)

// raceRun posts body to each env at the same moment and returns, per env, the status
// and the body (a 200's whole SSE stream, read to its end).
func raceRun(t *testing.T, envs []*testEnv, body string) (codes []int, bodies []string) {
	t.Helper()
	codes, bodies = make([]int, len(envs)), make([]string, len(envs))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, e := range envs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", e.ts.URL+"/v1/runs", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			<-start
			resp, err := e.ts.Client().Do(req)
			if err != nil {
				bodies[i] = err.Error()
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			codes[i], bodies[i] = resp.StatusCode, string(b)
		}()
	}
	close(start)
	wg.Wait()
	return codes, bodies
}

// checkOneRunStarted asserts that of the raced requests exactly one streamed a run
// that completed and the other got 409, and that the session stores that one run.
func checkOneRunStarted(t *testing.T, st loop.SessionStore, session string, codes []int, bodies []string) {
	t.Helper()
	sorted := slices.Sorted(slices.Values(codes))
	if !slices.Equal(sorted, []int{http.StatusOK, http.StatusConflict}) {
		t.Fatalf("session %s: statuses %v, want one 200 and one 409; bodies:\n%s", session, codes, strings.Join(bodies, "\n---\n"))
	}
	for i, code := range codes {
		switch {
		case code == http.StatusOK && !strings.Contains(bodies[i], `"type":"RUN_FINISHED"`):
			t.Fatalf("session %s: the accepted run's stream did not finish: %s", session, bodies[i])
		case code == http.StatusConflict && !strings.Contains(bodies[i], "r1"):
			t.Fatalf("session %s: the 409 does not name the run: %s", session, bodies[i])
		}
	}
	runs, err := st.Runs(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].ID != "r1" || runs[0].Status != loop.StatusCompleted {
		t.Fatalf("session %s stores runs %+v, want r1 once, completed", session, runs)
	}
}

// Run ids are unique per session (ARCHITECTURE.md) across nodes: one (session, run id)
// posted to two cluster nodes at the same moment starts exactly one run, and the other
// request is refused with 409 before a job is queued. Each node only read the stored
// runs before this was decided in PostgreSQL, so both saw a new id and both queued it.
func TestRunIDsUniquePerSession_TwoNodesRacingStartOneRun(t *testing.T) {
	url := pgtest.Start(t).NewDatabase(t)
	turns := []turn{{text: "Only once."}}
	nodes := []*testEnv{newTestEnv(t, envOptions{cluster: url}, turns...), newTestEnv(t, envOptions{cluster: url}, turns...)}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for i := range 4 {
		session := fmt.Sprintf("race%d", i)
		codes, bodies := raceRun(t, nodes, runBody(session, "r1", "say it once"))
		checkOneRunStarted(t, nodes[0].store, session, codes, bodies)
		// By the session key every job keeps: a completed job's input is pruned
		// (surface/cluster/atrest.go), and on a loaded machine it may be by now.
		var jobs int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'agenthost_run' AND args->>'session' = $1`, session).Scan(&jobs); err != nil {
			t.Fatal(err)
		}
		if jobs != 1 {
			t.Fatalf("session %s: %d run jobs queued, want 1", session, jobs)
		}
	}
}

// The same on one node, with and without a cluster: two concurrent requests with one
// (session, run id) start one run; the other is a 409.
func TestRunIDsUniquePerSession_OneNodeConcurrentRequestsStartOneRun(t *testing.T) {
	turns := []turn{{text: "Only once."}}
	for _, kind := range []string{"in-process", "cluster"} {
		t.Run(kind, func(t *testing.T) {
			o := envOptions{}
			if kind == "cluster" {
				o.cluster = pgtest.Start(t).NewDatabase(t)
			}
			e := newTestEnv(t, o, turns...)
			for i := range 4 {
				session := fmt.Sprintf("same%d", i)
				codes, bodies := raceRun(t, []*testEnv{e, e}, runBody(session, "r1", "say it once"))
				checkOneRunStarted(t, e.store, session, codes, bodies)
			}
		})
	}
}

// Run ids are per session in one process too: while s1's r1 waits in a tool, s2's r1
// runs beside it and streams to its own end, the route that names no session refuses
// to pick one (409), an abort naming s2 (whose r1 has ended) does not reach s1's r1,
// and s1's own route aborts it. The loop used to keep live runs by run id, so s2's r1
// was refused with 409 until s1's ended.
func TestRunIDsUniquePerSession_OneProcessRunsOneIDOnTwoSessionsAtOnce(t *testing.T) {
	started := make(chan string, 1)
	e := newTestEnv(t, envOptions{extraTools: []loop.Tool{sessionBlockingTool("s1", started)}}, waitTurns...)
	resp := startBlockedRun(t, e, started, "s1", "r1")
	defer resp.Body.Close()
	code, body := e.request(t, "POST", "/v1/runs", runBody("s2", "r1", "wait"))
	if code != 200 {
		t.Fatalf("s2/r1 beside s1/r1: %d %s", code, body)
	}
	equalLines(t, "s2/r1", brief(sseEvents(t, strings.NewReader(body))), []string{
		"RUN_STARTED",
		"TOOL_CALL_START w1 wait", `TOOL_CALL_ARGS "{"`, `TOOL_CALL_ARGS "}"`, "TOOL_CALL_END", "CUSTOM agenthost.usage",
		"STEP_STARTED tool:w1", `TOOL_CALL_RESULT w1 "done"`, "STEP_FINISHED tool:w1",
		"TEXT_MESSAGE_START", `TEXT_MESSAGE_CONTENT "contin"`, `TEXT_MESSAGE_CONTENT "ued"`, "TEXT_MESSAGE_END", "CUSTOM agenthost.usage",
		"RUN_FINISHED success completed/end_turn",
	})
	if code, body := e.request(t, "POST", "/v1/runs", runBody("s3", "r1", "wait")); code != 200 {
		t.Fatalf("s3/r1 beside s1/r1: %d %s", code, body)
	}
	code, body = e.request(t, "POST", "/v1/sessions/s2/runs/r1/abort", "")
	if code != 404 || strings.TrimSpace(body) != `{"error":"no run \"r1\" in progress"}` {
		t.Fatalf("abort s2/r1 (ended) while s1/r1 runs: %d %s", code, body)
	}
	code, body = e.request(t, "POST", "/v1/sessions/s1/runs/r1/abort", "")
	if code != 202 || strings.TrimSpace(body) != `{"aborting":true,"runId":"r1"}` {
		t.Fatalf("abort s1/r1: %d %s", code, body)
	}
	evs := brief(sseEvents(t, resp.Body))
	if evs[len(evs)-1] != "RUN_FINISHED cancelled aborted/cancelled" {
		t.Fatalf("s1/r1 ended %v, want aborted", evs)
	}
	for session, want := range map[string]loop.Status{"s1": loop.StatusAborted, "s2": loop.StatusCompleted, "s3": loop.StatusCompleted} {
		runs, err := e.store.Runs(context.Background(), session)
		if err != nil || len(runs) != 1 || runs[0].ID != "r1" || runs[0].Status != want {
			t.Fatalf("session %s stores runs %+v %v, want r1 %s", session, runs, err, want)
		}
	}
}

// Two sessions each running r1 at the same moment, both streams to their end.
func TestRunIDsUniquePerSession_ConcurrentRunsOfOneIDOnTwoSessionsBothComplete(t *testing.T) {
	e := newTestEnv(t, envOptions{}, turn{text: "Each its own."})
	for i := range 4 {
		bodies := make([]string, 2)
		codes := make([]int, 2)
		var wg sync.WaitGroup
		for j := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[j], bodies[j] = e.request(t, "POST", "/v1/runs", runBody(fmt.Sprintf("c%d-%d", i, j), "r1", "hi"))
			}()
		}
		wg.Wait()
		for j := range 2 {
			if codes[j] != 200 {
				t.Fatalf("round %d session %d: %d %s", i, j, codes[j], bodies[j])
			}
			equalLines(t, "stream", brief(sseEvents(t, strings.NewReader(bodies[j]))), []string{
				"RUN_STARTED", "TEXT_MESSAGE_START", `TEXT_MESSAGE_CONTENT "Each i"`, `TEXT_MESSAGE_CONTENT "ts own"`,
				`TEXT_MESSAGE_CONTENT "."`, "TEXT_MESSAGE_END", "CUSTOM agenthost.usage", "RUN_FINISHED success completed/end_turn",
			})
		}
	}
}

// sessionBlockingTool blocks, until its context ends, the calls of one session's runs;
// other sessions' calls answer "done".
func sessionBlockingTool(session string, started chan<- string) loop.Tool {
	return gatedBlockingTool(session, started, nil)
}

// gatedBlockingTool is sessionBlockingTool whose other sessions' calls wait for gate
// (when it is not nil) to close.
func gatedBlockingTool(session string, started chan<- string, gate <-chan struct{}) loop.Tool {
	return loop.FuncTool{
		ToolSpec: loop.ToolSpec{Name: "wait", Description: "waits until cancelled"},
		Fn: func(ctx context.Context, c loop.ToolCall) (loop.ToolResult, error) {
			if ci, _ := loop.CallInfoFrom(ctx); ci.SessionID != session {
				if gate != nil {
					select {
					case <-gate:
					case <-ctx.Done():
						return loop.ToolResult{}, context.Cause(ctx)
					}
				}
				return loop.TextResult("done"), nil
			}
			started <- c.ID
			<-ctx.Done()
			return loop.ToolResult{}, context.Cause(ctx)
		},
	}
}

// On a cluster, jobs are keyed by (session, run id): two sessions each with a run r1
// in progress are two runs. The route that names no session refuses to pick one (409),
// and aborting s1's run by its session route ends that run aborted while s2's r1
// completes. Jobs used to be found by run id alone: the abort hit whichever job was
// newest, s2's, and a node refused s2's r1 with 409 while it streamed s1's.
func TestRunIDsUniquePerSession_ClusterAbortReachesOnlyItsSession(t *testing.T) {
	started := make(chan string, 1)
	url := pgtest.Start(t).NewDatabase(t)
	// s2's call waits for the gate: its job must still be unfinished when the abort
	// that names no session looks for r1's jobs (it used to end first, now and then).
	gate := make(chan struct{})
	e := newTestEnv(t, envOptions{cluster: url, extraTools: []loop.Tool{gatedBlockingTool("s1", started, gate)}}, waitTurns...)
	resp1 := startBlockedRun(t, e, started, "s1", "r1")
	defer resp1.Body.Close()
	// s2's r1 runs beside s1's (run ids are per session on one agent too).
	resp2c := make(chan *http.Response, 1)
	go func() { resp2c <- e.do(t, "POST", "/v1/runs", runBody("s2", "r1", "wait"), e.token) }()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for deadline := time.Now().Add(30 * time.Second); ; {
		// By the session key every job keeps: a completed job's input is pruned
		// (surface/cluster/atrest.go), and on a loaded machine it may be by now.
		var jobs int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE args->>'session' = 's2'`).Scan(&jobs); err != nil {
			t.Fatal(err)
		}
		if jobs == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("s2's r1 was not queued within 30s")
		}
		time.Sleep(20 * time.Millisecond) // polling for s2's job, bounded by the deadline
	}
	code, body := e.request(t, "POST", "/v1/runs/r1/abort", "")
	if code != 409 || !strings.Contains(body, "POST /v1/sessions/{session}/runs/r1/abort") {
		t.Fatalf("abort r1 without a session while s1 and s2 run it: %d %s, want 409", code, body)
	}
	if code, body := e.request(t, "POST", "/v1/sessions/s1/runs/r1/abort", ""); code != 202 {
		t.Fatalf("abort s1/r1: %d %s", code, body)
	}
	close(gate)
	evs := brief(sseEvents(t, resp1.Body))
	if evs[len(evs)-1] != "RUN_FINISHED cancelled aborted/cancelled" {
		t.Fatalf("s1/r1 ended %v, want aborted", evs)
	}
	resp2 := waitFor(t, "s2's response", resp2c)
	defer resp2.Body.Close()
	if resp2.StatusCode != 200 {
		t.Fatalf("s2/r1: %d", resp2.StatusCode)
	}
	evs = brief(sseEvents(t, resp2.Body))
	if evs[len(evs)-1] != "RUN_FINISHED success completed/end_turn" {
		t.Fatalf("s2/r1 ended %v, want completed", evs)
	}
	for session, want := range map[string]loop.Status{"s1": loop.StatusAborted, "s2": loop.StatusCompleted} {
		runs, err := e.store.Runs(context.Background(), session)
		if err != nil || len(runs) != 1 || runs[0].ID != "r1" || runs[0].Status != want {
			t.Fatalf("session %s stores runs %+v %v, want r1 %s", session, runs, err, want)
		}
	}
}
