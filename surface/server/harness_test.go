package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/loop/looptest"
	"github.com/agenthost/agenthost/store/postgres"
	"github.com/agenthost/agenthost/surface/cluster"
)

// turn is one answer of the in-process model.
type turn struct {
	reasoning, text string
	calls           []loop.ToolCall
	err             error // the model call fails with it
}

// newTurnModel answers each session's model calls with the turns in order (per session,
// so concurrent runs do not steal each other's turns), streaming text in 6-rune chunks.
func newTurnModel(turns ...turn) *looptest.Model {
	lt := make([]looptest.Turn, len(turns))
	for i, t := range turns {
		lt[i] = looptest.Turn{Reasoning: t.reasoning, Text: t.text, Chunk: 6, Calls: t.calls, Err: t.err}
	}
	return looptest.NewSessionModel(lt...)
}

// addTool answers "added" with the sum of a and b.
var addTool = loop.FuncTool{
	ToolSpec: loop.ToolSpec{Name: "add", Description: "add two numbers",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)},
	Fn: func(_ context.Context, c loop.ToolCall) (loop.ToolResult, error) {
		var in struct{ A, B float64 }
		if err := json.Unmarshal([]byte(c.Arguments), &in); err != nil {
			return loop.ToolResult{}, err
		}
		return loop.TextResult(fmt.Sprint(in.A + in.B)), nil
	},
}

// blockingTool reports on started when called and returns only when its context ends.
func blockingTool(started chan<- string) loop.Tool {
	return loop.FuncTool{
		ToolSpec: loop.ToolSpec{Name: "wait", Description: "waits until cancelled"},
		Fn: func(ctx context.Context, c loop.ToolCall) (loop.ToolResult, error) {
			started <- c.ID
			<-ctx.Done()
			return loop.ToolResult{}, context.Cause(ctx)
		},
	}
}

// testEnv is an in-process agent served by httptest.
type testEnv struct {
	srv   *Server
	ts    *httptest.Server
	store loop.SessionStore
	token string
	model *looptest.Model // records what the model received
}

type envOptions struct {
	token           string
	store           loop.SessionStore
	requireApproval []string
	maxBody         int64
	extraTools      []loop.Tool
	allowHosts      []string
	allowOrigins    []string
	bodyTimeout     time.Duration
	context         []loop.ContextStrategy
	wrap            func(http.Handler) http.Handler // serves the server through this handler
	log             *slog.Logger                    // the server's Options.Log
	// cluster is a PostgreSQL URL: the env is a cluster node there (its own store
	// connection, runs as River jobs, two workers), as `serve --workers 2` is.
	cluster string
	// wrapModel, when set, wraps the scripted model the agent calls.
	wrapModel func(loop.Model) loop.Model
	// audit is the server's Options.Audit.
	audit func(ctx context.Context, r audit.Record) error
}

func newTestEnv(t *testing.T, o envOptions, turns ...turn) *testEnv {
	t.Helper()
	if o.cluster != "" && o.store == nil {
		st, err := postgres.Open(context.Background(), o.cluster)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		o.store = st
	}
	if o.store == nil {
		o.store = loop.NewMemoryStore()
	}
	tools, err := loop.NewToolSet(append([]loop.Tool{addTool}, o.extraTools...)...)
	if err != nil {
		t.Fatal(err)
	}
	model := newTurnModel(turns...)
	var m loop.Model = model
	if o.wrapModel != nil {
		m = o.wrapModel(model)
	}
	agent, err := loop.New(loop.Config{Name: "test", SystemPrompt: "You add.", Model: m, ModelName: "fake",
		Tools: tools, Store: o.store, Approver: InterruptApprover{},
		ToolPolicy: loop.ToolPolicy{RequireApproval: o.requireApproval}, Context: o.context})
	if err != nil {
		t.Fatal(err)
	}
	var dispatch Dispatcher
	if o.cluster != "" {
		cl, err := cluster.New(context.Background(), cluster.Options{URL: o.cluster, Runner: agent, Store: o.store, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cl.Close(context.Background()) }) // after the server's drain, below
		dispatch = cl
	}
	srv, err := New(Options{Agent: agent, Store: o.store, Token: o.token, MaxBodyBytes: o.maxBody, Audit: o.audit,
		AllowHosts: o.allowHosts, AllowOrigins: o.allowOrigins, BodyReadTimeout: o.bodyTimeout, Dispatch: dispatch, Log: o.log})
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = srv
	if o.wrap != nil {
		h = o.wrap(srv)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Drain(ctx); err != nil {
			t.Error(err)
		}
		ts.Close()
	})
	return &testEnv{srv: srv, ts: ts, store: o.store, token: o.token, model: model}
}

// request sends a request with the env's token (if any) and returns status and body.
func (e *testEnv) request(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	resp := e.do(t, method, path, body, e.token)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func (e *testEnv) do(t *testing.T, method, path, body, token string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, e.ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// runBody is a RunAgentInput with one user message.
func runBody(thread, run, text string) string {
	b, _ := json.Marshal(map[string]any{"threadId": thread, "runId": run,
		"messages": []map[string]any{{"id": "m-" + run, "role": "user", "content": text}}})
	return string(b)
}

func resumeBody(thread, run, interrupt, payload string) string {
	return fmt.Sprintf(`{"threadId":%q,"runId":%q,"messages":[],"resume":[{"interruptId":%q,"status":"resolved","payload":%s}]}`,
		thread, run, interrupt, payload)
}

// sseEvents reads an SSE stream of AG-UI events into generic maps.
func sseEvents(t *testing.T, r io.Reader) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "id: ") { // a dispatched run's frames carry their seq
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("unexpected SSE line %q", line)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("bad event %q: %v", data, err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("read stream: %v", err)
	}
	return out
}

// run posts a run and returns its events (status must be 200).
func (e *testEnv) run(t *testing.T, body string) []map[string]any {
	t.Helper()
	resp := e.do(t, "POST", "/v1/runs", body, e.token)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST /v1/runs: %d %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	return sseEvents(t, resp.Body)
}

// brief renders events as short strings for exact sequence checks: the type, plus the
// fields that identify what it is about; CUSTOM status events are left out.
func brief(evs []map[string]any) []string {
	var out []string
	for _, ev := range evs {
		s := ev["type"].(string)
		switch s {
		case "CUSTOM":
			if ev["name"] == "agenthost.status" {
				continue
			}
			s += " " + ev["name"].(string)
		case "TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", "TOOL_CALL_ARGS":
			s += fmt.Sprintf(" %q", ev["delta"])
		case "TOOL_CALL_START":
			s += fmt.Sprintf(" %s %s", ev["toolCallId"], ev["toolCallName"])
		case "TOOL_CALL_RESULT":
			s += fmt.Sprintf(" %s %q", ev["toolCallId"], ev["content"])
		case "STEP_STARTED", "STEP_FINISHED":
			s += " " + ev["stepName"].(string)
		case "RUN_FINISHED":
			oc, _ := ev["outcome"].(map[string]any)
			res, _ := ev["result"].(map[string]any)
			s += fmt.Sprintf(" %v %v/%v", oc["type"], res["status"], res["reason"])
			if its, ok := oc["interrupts"].([]any); ok {
				for _, it := range its {
					s += fmt.Sprintf(" interrupt:%v", it.(map[string]any)["id"])
				}
			}
		case "RUN_ERROR":
			s += fmt.Sprintf(" %v: %v", ev["code"], ev["message"])
		case "MESSAGES_SNAPSHOT":
			for _, m := range ev["messages"].([]any) {
				m := m.(map[string]any)
				s += fmt.Sprintf(" %v:%v", m["role"], m["id"])
			}
		case "STATE_SNAPSHOT":
			b, _ := json.Marshal(ev["snapshot"])
			s += " " + string(b)
		}
		out = append(out, s)
	}
	return out
}

func equalLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\ngot:\n  %s\nwant:\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// waitFor receives from ch within a bound, or fails.
func waitFor[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }
