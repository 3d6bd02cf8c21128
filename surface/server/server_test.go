package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

var addTurns = []turn{
	{reasoning: "I should add.", text: "Adding.", calls: []loop.ToolCall{{ID: "c1", Name: "add", Arguments: `{"a":2,"b":40}`}}},
	{text: "The sum is 42."},
}

func TestRunStreamsAGUIEventsInOrder(t *testing.T) {
	e := newTestEnv(t, envOptions{}, addTurns...)
	evs := e.run(t, runBody("s1", "r1", "what is 2+40?"))
	equalLines(t, "events", brief(evs), []string{
		"RUN_STARTED",
		"REASONING_START", "REASONING_MESSAGE_START", `REASONING_MESSAGE_CONTENT "I should add."`,
		"REASONING_MESSAGE_END", "REASONING_END",
		"TEXT_MESSAGE_START", `TEXT_MESSAGE_CONTENT "Adding"`, `TEXT_MESSAGE_CONTENT "."`, "TEXT_MESSAGE_END",
		// The arguments arrive as the model streams them, a fragment at a time.
		"TOOL_CALL_START c1 add", `TOOL_CALL_ARGS "{\"a\":2,"`, `TOOL_CALL_ARGS "\"b\":40}"`, "TOOL_CALL_END",
		"CUSTOM agenthost.usage",
		"STEP_STARTED tool:c1", `TOOL_CALL_RESULT c1 "42"`, "STEP_FINISHED tool:c1",
		"TEXT_MESSAGE_START", `TEXT_MESSAGE_CONTENT "The su"`, `TEXT_MESSAGE_CONTENT "m is 4"`, `TEXT_MESSAGE_CONTENT "2."`, "TEXT_MESSAGE_END",
		"CUSTOM agenthost.usage",
		"RUN_FINISHED success completed/end_turn",
	})
	first, last := evs[0], evs[len(evs)-1]
	if first["threadId"] != "s1" || first["runId"] != "r1" {
		t.Fatalf("RUN_STARTED %v", first)
	}
	res := last["result"].(map[string]any)
	if last["threadId"] != "s1" || last["runId"] != "r1" || res["text"] != "The sum is 42." {
		t.Fatalf("RUN_FINISHED %v", last)
	}
	usage, _ := json.Marshal(last["usage"])
	if string(usage) != `[{"inputTokens":20,"model":"fake","outputTokens":10,"totalTokens":30}]` {
		t.Fatalf("usage %s", usage)
	}
	// The tool call and the text of one model response belong to the same message.
	for _, ev := range evs {
		if ev["type"] == "TOOL_CALL_START" && ev["parentMessageId"] != "r1:msg:0" {
			t.Fatalf("parentMessageId %v", ev["parentMessageId"])
		}
	}
}

func TestAuth(t *testing.T) {
	e := newTestEnv(t, envOptions{token: "s3cret"}, addTurns...)
	for _, c := range []struct {
		name, token string
		code        int
		body        string
	}{
		{"no token", "", 401, `{"error":"missing bearer token: send Authorization: Bearer TOKEN"}`},
		{"wrong token", "s3cret-not", 401, `{"error":"invalid bearer token"}`},
		{"right token", "s3cret", 200, `{"sessions":[]}`},
	} {
		resp := e.do(t, "GET", "/v1/sessions", "", c.token)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || strings.TrimSpace(string(b)) != c.body {
			t.Errorf("%s: got %d %s, want %d %s", c.name, resp.StatusCode, b, c.code, c.body)
		}
	}
	// A run without the token is refused before anything runs.
	resp := e.do(t, "POST", "/v1/runs", runBody("s1", "r1", "hi"), "")
	resp.Body.Close()
	if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("run without token: %d %v", resp.StatusCode, resp.Header)
	}
	// Health and the page need no token.
	for _, p := range []string{"/healthz", "/"} {
		resp := e.do(t, "GET", p, "", "")
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s: %d", p, resp.StatusCode)
		}
	}
}

func TestRequestLimitsAndBadInput(t *testing.T) {
	e := newTestEnv(t, envOptions{maxBody: 256}, addTurns...)
	for _, c := range []struct {
		name, body string
		code       int
		want       string
	}{
		{"oversized", runBody("s1", "r1", strings.Repeat("x", 300)), 413, `{"error":"request body exceeds 256 bytes"}`},
		{"malformed JSON", `{"threadId": "s1", "runId": `, 400, `{"error":"malformed JSON in request body: unexpected end of JSON input"}`},
		{"wrong type", `{"threadId": 7}`, 400, `{"error":"malformed JSON in request body: json: cannot unmarshal number into Go struct field RunAgentInput.threadId of type string"}`},
		{"no thread", `{"runId":"r1","messages":[]}`, 400, `{"error":"invalid RunAgentInput: threadId is required (it names the session)"}`},
		{"nothing to do", `{"threadId":"s1","runId":"r1","messages":[{"id":"a","role":"assistant","content":"hi"}]}`, 400,
			`{"error":"invalid RunAgentInput: nothing to run: no trailing user or tool message and no resume entries"}`},
		{"bad resume", `{"threadId":"s1","runId":"r1","messages":[],"resume":[{"interruptId":"c1","status":"maybe"}]}`, 400,
			`{"error":"invalid RunAgentInput: resume[0] (interrupt \"c1\"): status \"maybe\": want resolved or cancelled"}`},
	} {
		code, body := e.request(t, "POST", "/v1/runs", c.body)
		if code != c.code || strings.TrimSpace(body) != c.want {
			t.Errorf("%s: got %d %s, want %d %s", c.name, code, body, c.code, c.want)
		}
	}
	code, body := e.request(t, "GET", "/v1/nothing", "")
	if code != 404 || strings.TrimSpace(body) != `{"error":"no route GET /v1/nothing"}` {
		t.Errorf("unknown route: %d %s", code, body)
	}
}

// startBlockedRun starts a run whose tool blocks until the run is cancelled, and returns
// its response once the tool is running.
func startBlockedRun(t *testing.T, e *testEnv, started <-chan string, thread, run string) *http.Response {
	t.Helper()
	respc := make(chan *http.Response, 1)
	go func() { respc <- e.do(t, "POST", "/v1/runs", runBody(thread, run, "wait"), e.token) }()
	resp := waitFor(t, "the response headers", respc)
	if resp.StatusCode != 200 {
		t.Fatalf("blocked run: %d", resp.StatusCode)
	}
	if id := waitFor(t, "the tool to start", started); id != "w1" {
		t.Fatalf("tool call %q started", id)
	}
	return resp
}

var waitTurns = []turn{{calls: []loop.ToolCall{{ID: "w1", Name: "wait", Arguments: `{}`}}}, {text: "continued"}}

func TestSecondRunOnBusySessionIs409(t *testing.T) {
	started := make(chan string, 1)
	e := newTestEnv(t, envOptions{extraTools: []loop.Tool{blockingTool(started)}}, waitTurns...)
	resp := startBlockedRun(t, e, started, "s1", "r1")
	defer resp.Body.Close()
	code, body := e.request(t, "POST", "/v1/runs", runBody("s1", "r2", "again"))
	want := `{"error":"session \"s1\" already has a run in progress (r1); abort it or wait for it to finish"}`
	if code != 409 || strings.TrimSpace(body) != want {
		t.Fatalf("second run: %d %s", code, body)
	}
	code, body = e.request(t, "POST", "/v1/runs", runBody("s1", "r1", "same run again"))
	if code != 409 || strings.TrimSpace(body) != `{"error":"run \"r1\" is already in progress"}` {
		t.Fatalf("same session, same run id: %d %s", code, body)
	}
	if code, _ := e.request(t, "POST", "/v1/runs/r1/abort", ""); code != 202 {
		t.Fatalf("abort: %d", code)
	}
	sseEvents(t, resp.Body)
}

func TestAbortMidTool(t *testing.T) {
	started := make(chan string, 1)
	e := newTestEnv(t, envOptions{extraTools: []loop.Tool{blockingTool(started)}}, waitTurns...)
	resp := startBlockedRun(t, e, started, "s1", "r1")
	defer resp.Body.Close()
	code, body := e.request(t, "POST", "/v1/runs/r1/abort", "")
	if code != 202 || strings.TrimSpace(body) != `{"aborting":true,"runId":"r1"}` {
		t.Fatalf("abort: %d %s", code, body)
	}
	evs := sseEvents(t, resp.Body)
	equalLines(t, "aborted run", brief(evs), []string{
		"RUN_STARTED",
		"TOOL_CALL_START w1 wait", `TOOL_CALL_ARGS "{"`, `TOOL_CALL_ARGS "}"`, "TOOL_CALL_END", "CUSTOM agenthost.usage",
		"STEP_STARTED tool:w1", `TOOL_CALL_RESULT w1 "Error: run aborted"`, "STEP_FINISHED tool:w1",
		"RUN_FINISHED cancelled aborted/cancelled",
	})
	code, body = e.request(t, "POST", "/v1/runs/r1/abort", "")
	if code != 404 || strings.TrimSpace(body) != `{"error":"no run \"r1\" in progress"}` {
		t.Fatalf("abort a finished run: %d %s", code, body)
	}
	runs, _ := e.store.Runs(context.Background(), "s1")
	if len(runs) != 1 || runs[0].Status != loop.StatusAborted {
		t.Fatalf("stored runs %+v", runs)
	}
	// The session is kept (with the aborted call's error result): the next run continues it.
	evs = e.run(t, runBody("s1", "r2", "go on"))
	if got := brief(evs); got[len(got)-1] != "RUN_FINISHED success completed/end_turn" || evs[len(evs)-1]["result"].(map[string]any)["text"] != "continued" {
		t.Fatalf("continued run: %v", got)
	}
}

func TestApprovalApproveAndReject(t *testing.T) {
	for _, c := range []struct {
		name, payload, result, text string
	}{
		{"approve", `{"approved":true}`, "42", "The sum is 42."},
		{"reject", `{"approved":false,"reason":"not today"}`, "Error: tool call rejected: not today", "The sum is 42."},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newTestEnv(t, envOptions{requireApproval: []string{"add"}}, addTurns...)
			evs := e.run(t, runBody("s1", "r1", "what is 2+40?"))
			got := brief(evs)
			// The step of the call awaiting approval is closed before RUN_FINISHED, as
			// AG-UI requires; the call has no result yet.
			equalLines(t, "interrupted run", got[len(got)-5:], []string{
				"TOOL_CALL_END", "CUSTOM agenthost.usage", "STEP_STARTED tool:c1", "STEP_FINISHED tool:c1",
				"RUN_FINISHED interrupt interrupted/approval_required interrupt:c1",
			})
			last := evs[len(evs)-1]
			// The interrupt names the hash of the arguments the answer is bound to and
			// when the request expires (docs/approvals.md).
			md := last["outcome"].(map[string]any)["interrupts"].([]any)[0].(map[string]any)["metadata"].(map[string]any)
			if md["argsHash"] != loop.ArgsHash(`{"a":2,"b":40}`) || md["expiresAt"] == nil {
				t.Fatalf("interrupt metadata %v", md)
			}
			delete(md, "argsHash")
			delete(md, "expiresAt")
			b, _ := json.Marshal(last["outcome"])
			want := `{"interrupts":[{"id":"c1","message":"Allow add {\"a\":2,\"b\":40}?","metadata":{"arguments":{"a":2,"b":40},"toolName":"add"},"reason":"approval_required","toolCallId":"c1"}],"type":"interrupt"}`
			if string(b) != want {
				t.Fatalf("outcome:\n got %s\nwant %s", b, want)
			}
			evs = e.run(t, resumeBody("s1", "r2", "c1", c.payload))
			equalLines(t, "resumed run", brief(evs), []string{
				// The thread so far; the resume sent no messages, so the user message is
				// named by its stored entry.
				"RUN_STARTED", "MESSAGES_SNAPSHOT user:s1:entry:4 assistant:r1:msg:0",
				"STEP_STARTED tool:c1", fmt.Sprintf("TOOL_CALL_RESULT c1 %q", c.result), "STEP_FINISHED tool:c1",
				"TEXT_MESSAGE_START", `TEXT_MESSAGE_CONTENT "The su"`, `TEXT_MESSAGE_CONTENT "m is 4"`, `TEXT_MESSAGE_CONTENT "2."`, "TEXT_MESSAGE_END",
				"CUSTOM agenthost.usage",
				"RUN_FINISHED success completed/end_turn",
			})
		})
	}
}

func TestShutdownAbortsRunsInFlightAndStoresTheirEnd(t *testing.T) {
	started := make(chan string, 1)
	st := loop.NewMemoryStore()
	e := newTestEnv(t, envOptions{store: st, extraTools: []loop.Tool{blockingTool(started)}}, waitTurns...)
	resp := startBlockedRun(t, e, started, "s1", "r1")
	defer resp.Body.Close()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- e.srv.Drain(ctx)
	}()
	evs := sseEvents(t, resp.Body)
	if err := waitFor(t, "drain", done); err != nil {
		t.Fatal(err)
	}
	got := brief(evs)
	if got[len(got)-1] != "RUN_FINISHED cancelled aborted/cancelled" {
		t.Fatalf("last event %s", got[len(got)-1])
	}
	code, body := e.request(t, "POST", "/v1/runs", runBody("s2", "r2", "late"))
	if code != 503 || strings.TrimSpace(body) != `{"error":"server is shutting down"}` {
		t.Fatalf("run while draining: %d %s", code, body)
	}
	entries, _ := st.Load(context.Background(), "s1")
	lastEv := entries[len(entries)-1].Event
	if lastEv == nil || lastEv.Type != loop.EventRunFinished || lastEv.Data.(*loop.RunFinishedData).Status != loop.StatusAborted {
		t.Fatalf("last stored entry %+v", entries[len(entries)-1])
	}
	// A new server on the same store continues the session.
	e2 := newTestEnv(t, envOptions{store: st, extraTools: []loop.Tool{blockingTool(started)}}, turn{text: "continued"})
	evs = e2.run(t, runBody("s1", "r3", "go on"))
	if got := brief(evs); got[len(got)-1] != "RUN_FINISHED success completed/end_turn" || evs[len(evs)-1]["result"].(map[string]any)["text"] != "continued" {
		t.Fatalf("continued run: %v", got)
	}
}

func TestSessionsListAndShow(t *testing.T) {
	e := newTestEnv(t, envOptions{}, addTurns...)
	e.run(t, runBody("s1", "r1", "what is 2+40?"))
	code, body := e.request(t, "GET", "/v1/sessions", "")
	var list struct{ Sessions []sessionSummary }
	if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil || len(list.Sessions) != 1 ||
		list.Sessions[0].ID != "s1" || list.Sessions[0].Runs != 1 || list.Sessions[0].Entries < 10 || list.Sessions[0].Updated.IsZero() {
		t.Fatalf("sessions: %d %s", code, body)
	}
	code, body = e.request(t, "GET", "/v1/sessions/s1", "")
	var d sessionDetail
	if err := json.Unmarshal([]byte(body), &d); code != 200 || err != nil {
		t.Fatalf("session: %d %v %s", code, err, body)
	}
	var roles []string
	for _, en := range d.Entries {
		if en.Kind == loop.EntryMessage {
			roles = append(roles, string(en.Message.Role))
		}
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool,assistant" || len(d.Runs) != 1 || d.Runs[0].Status != loop.StatusCompleted {
		t.Fatalf("session s1: roles %v runs %+v", roles, d.Runs)
	}
	code, body = e.request(t, "GET", "/v1/sessions/nope", "")
	if code != 404 || strings.TrimSpace(body) != `{"error":"no session \"nope\""}` {
		t.Fatalf("missing session: %d %s", code, body)
	}
}

// Hole 4: run ids are per session. A finished run's id is refused on its own session
// (409, the stored run untouched) and free on another.
func TestHole4_UsedRunIDOnItsSessionIs409(t *testing.T) {
	e := newTestEnv(t, envOptions{}, addTurns[1], addTurns[1])
	e.run(t, runBody("s1", "r1", "first"))
	code, body := e.request(t, "POST", "/v1/runs", runBody("s1", "r1", "again"))
	want := `{"error":"run \"r1\" not started: loop: run \"r1\" on session \"s1\": run id already used on this session"}`
	if code != 409 || strings.TrimSpace(body) != want {
		t.Fatalf("reused run id: %d %s", code, body)
	}
	evs := e.run(t, runBody("s2", "r1", "other session"))
	if got := brief(evs); got[len(got)-1] != "RUN_FINISHED success completed/end_turn" {
		t.Fatalf("r1 on s2: %v", got)
	}
	runs, _ := e.store.Runs(context.Background(), "s1")
	if len(runs) != 1 || runs[0].Status != loop.StatusCompleted {
		t.Fatalf("s1's runs: %+v", runs)
	}
}
