package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/pgtest"
	"github.com/agenthost/agenthost/store/postgres"
)

// failSpy is the PostgreSQL store, reporting the writes that fail.
type failSpy struct {
	*postgres.Store
	failed chan error
}

func (s *failSpy) report(err error) error {
	if err != nil {
		select {
		case s.failed <- err:
		default:
		}
	}
	return err
}

func (s *failSpy) Append(ctx context.Context, session string, es ...loop.Entry) error {
	return s.report(s.Store.Append(ctx, session, es...))
}

func (s *failSpy) AppendRun(ctx context.Context, r loop.RunRecord, es ...loop.Entry) error {
	return s.report(s.Store.AppendRun(ctx, r, es...))
}

// gatedModel holds its n-th call until gate is closed, after telling started.
type gatedModel struct {
	loop.Model
	n, at   int32
	started chan struct{}
	gate    chan struct{}
}

func (m *gatedModel) Stream(ctx context.Context, req loop.Request) (loop.Stream, error) {
	if atomic.AddInt32(&m.n, 1) == m.at {
		close(m.started)
		select {
		case <-m.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return m.Model.Stream(ctx, req)
}

// streamReader reads a dispatched run's SSE events in the background.
func streamReader(resp *http.Response) <-chan map[string]any {
	ch := make(chan map[string]any, 256)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var ev map[string]any
				if json.Unmarshal([]byte(data), &ev) == nil {
					ch <- ev
				}
			}
		}
	}()
	return ch
}

// Issue 29: PostgreSQL crashes (pg_ctl stop -m immediate) while a cluster run waits for
// its model, after its tool's result was stored; the model answers while the database
// is down, so the run cannot store its end. The job is not completed: River retries it
// once the database is back, the retry continues the session and completes. The client's
// stream says the store went away and came back, and shows one run: one RUN_STARTED,
// one RUN_FINISHED, the tool once. The tool, whose result was stored, ran once.
func TestStoreOutage_AClusterRunIsRetriedFromItsStoredPrefixAndEndsOnce(t *testing.T) {
	srv := pgtest.Start(t)
	url := srv.NewDatabase(t)
	pg, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	spy := &failSpy{Store: pg, failed: make(chan error, 16)}
	var counted atomic.Int32
	count := loop.FuncTool{ToolSpec: loop.ToolSpec{Name: "count", Description: "counts its calls"},
		Fn: func(context.Context, loop.ToolCall) (loop.ToolResult, error) {
			counted.Add(1)
			return loop.TextResult("counted"), nil
		}}
	gm := &gatedModel{at: 2, started: make(chan struct{}), gate: make(chan struct{})}
	e := newTestEnv(t, envOptions{cluster: url, store: spy, extraTools: []loop.Tool{count},
		wrapModel: func(m loop.Model) loop.Model { gm.Model = m; return gm }},
		turn{calls: []loop.ToolCall{{ID: "c1", Name: "count", Arguments: `{}`}}},
		turn{text: "Lost in the outage."},
		turn{text: "Done after the outage."})

	resp := e.do(t, "POST", "/v1/runs", runBody("s1", "r1", "count once"), e.token)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/runs: %d", resp.StatusCode)
	}
	events := streamReader(resp)
	var seen []map[string]any
	until := func(what string, match func(map[string]any) bool) {
		t.Helper()
		deadline := time.After(120 * time.Second)
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					runs, _ := pg.Runs(context.Background(), "s1")
					es, _ := pg.Load(context.Background(), "s1")
					var d []string
					for _, en := range es {
						if en.Event != nil {
							d = append(d, fmt.Sprintf("%d:%s:%s", en.Seq, en.RunID, en.Event.Type))
						}
					}
					t.Fatalf("the stream ended before %s: %v\nruns %+v\nentries %v", what, brief(seen), runs, d)
				}
				seen = append(seen, ev)
				if match(ev) {
					return
				}
			case <-deadline:
				t.Fatalf("no %s: %v", what, brief(seen))
			}
		}
	}
	custom := func(name string) func(map[string]any) bool {
		return func(ev map[string]any) bool { return ev["type"] == "CUSTOM" && ev["name"] == name }
	}

	waitFor(t, "the second model call", gm.started)
	restart := srv.Crash(t)
	restarted := false
	defer func() {
		if !restarted { // the server is shared by the package's tests
			restart()
		}
	}()
	until("the stream's report of the outage", custom("agenthost.store_unavailable"))
	close(gm.gate) // the model answers; the run cannot store it
	select {
	case <-spy.failed:
	case <-time.After(60 * time.Second):
		t.Fatal("no write failed while the database was down")
	}
	restart()
	restarted = true
	until("the stream's report that the store is back", custom("agenthost.store_available"))
	until("RUN_FINISHED", func(ev map[string]any) bool { return ev["type"] == "RUN_FINISHED" })

	var started, finished, results int
	for _, ev := range seen {
		switch ev["type"] {
		case "RUN_STARTED":
			started++
		case "RUN_FINISHED":
			finished++
		case "TOOL_CALL_RESULT":
			results++
		case "RUN_ERROR":
			t.Fatalf("RUN_ERROR in the stream: %v", ev)
		}
	}
	fin := seen[len(seen)-1]
	if res, _ := fin["result"].(map[string]any); started != 1 || finished != 1 || results != 1 || res["status"] != "completed" ||
		!strings.Contains(res["text"].(string), "Done after the outage.") {
		t.Fatalf("the client saw %d RUN_STARTED, %d RUN_FINISHED, %d TOOL_CALL_RESULT, ending %v: %v", started, finished, results, fin, brief(seen))
	}
	if n := counted.Load(); n != 1 {
		t.Fatalf("the tool, whose result was stored, ran %d times", n)
	}
	runs, err := pg.Runs(context.Background(), "s1")
	if err != nil || len(runs) != 2 || runs[0].Status != loop.StatusAborted || runs[1].ID != "r1~2" || runs[1].Status != loop.StatusCompleted {
		t.Fatalf("stored runs %+v %v: want the dead attempt aborted and its retry completed", runs, err)
	}
	entries, _ := pg.Load(context.Background(), "s1")
	ends := map[string]int{}
	for _, en := range entries {
		if en.Kind == loop.EntryEvent && en.Event.Type == loop.EventRunFinished {
			ends[en.RunID]++
		}
	}
	if ends["r1"] != 1 || ends["r1~2"] != 1 || len(ends) != 2 {
		t.Fatalf("stored run_finished per attempt: %v", ends)
	}
}
