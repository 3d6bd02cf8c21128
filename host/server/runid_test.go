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
		var jobs int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE args->'input'->>'SessionID' = $1`, session).Scan(&jobs); err != nil {
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
