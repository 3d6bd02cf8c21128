package server

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// mixedTurns: one answer calls the server's add (c1) and the client's confirm (c2), so
// the run stops for the client with c1's result already stored and streamed.
var mixedTurns = []turn{
	{text: "Adding, then asking.", calls: []loop.ToolCall{
		{ID: "c1", Name: "add", Arguments: `{"a":2,"b":40}`},
		{ID: "c2", Name: "confirm", Arguments: `{}`},
	}},
	{text: "Confirmed: 42."},
}

const confirmTool = `"tools":[{"name":"confirm","description":"ask the user","parameters":{"type":"object"}}]`

// resumeWithResults is the official client's request after the client-tool interrupt:
// its whole conversation, with its copy of c1's streamed result before its own answer.
func resumeWithResults(run, c1 string) string {
	return fmt.Sprintf(`{"threadId":"s1","runId":%q,%s,"messages":[
	  {"id":"m-r1","role":"user","content":"add, then confirm"},
	  {"id":"r1:msg:0","role":"assistant","content":"Adding, then asking.","toolCalls":[
	    {"id":"c1","type":"function","function":{"name":"add","arguments":"{\"a\":2,\"b\":40}"}},
	    {"id":"c2","type":"function","function":{"name":"confirm","arguments":"{}"}}]},
	  {"id":"r1:result:c1","role":"tool","toolCallId":"c1","content":%q},
	  {"id":"t-c2","role":"tool","toolCallId":"c2","content":"yes"}]}`, run, confirmTool, c1)
}

func startMixed(t *testing.T) *testEnv {
	t.Helper()
	e := newTestEnv(t, envOptions{}, mixedTurns...)
	evs := e.run(t, `{"threadId":"s1","runId":"r1",`+confirmTool+`,"messages":[{"id":"m-r1","role":"user","content":"add, then confirm"}]}`)
	if got := brief(evs); got[len(got)-1] != "RUN_FINISHED <nil> interrupted/client_tool_call" {
		t.Fatalf("run 1: %v", got)
	}
	return e
}

// toolResults lists the tool messages of the stored session, as CALLID=TEXT.
func toolResults(t *testing.T, st loop.SessionStore, session string) string {
	t.Helper()
	entries, err := st.Load(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, en := range entries {
		if en.Message != nil && en.Message.Role == loop.RoleTool {
			out = append(out, en.Message.ToolCallID+"="+en.Message.Text())
		}
	}
	return strings.Join(out, " ")
}

// L16 (a call has one result), AG-UI resume: the client's copy of a result the server
// streamed and stored is recognised and not appended again, so the model receives
// each call's result once and the session stores it once.
func TestL16_ResumeEchoOfAStoredToolResultIsNotAppended(t *testing.T) {
	e := startMixed(t)
	evs := e.run(t, resumeWithResults("r2", "42"))
	if got := brief(evs); got[len(got)-1] != "RUN_FINISHED success completed/end_turn" {
		t.Fatalf("run 2: %v", got)
	}
	reqs := e.model.Requests()
	var roles []string
	for _, m := range reqs[len(reqs)-1].Messages {
		roles = append(roles, string(m.Role)+":"+m.ToolCallID)
	}
	if got := strings.Join(roles, " "); got != "system: user: assistant: tool:c1 tool:c2" {
		t.Fatalf("the model received %s", got)
	}
	if got := toolResults(t, e.store, "s1"); got != "c1=42 c2=yes" {
		t.Fatalf("stored tool results: %s", got)
	}
}

// L16: a result that contradicts the stored one for its call is a 400 naming the call,
// and nothing is stored.
func TestL16_ResumeWithADifferentResultForAStoredCallIs400(t *testing.T) {
	e := startMixed(t)
	code, body := e.request(t, "POST", "/v1/runs", resumeWithResults("r2", "41"))
	want := `{"error":"invalid RunAgentInput: messages[2] (id \"r1:result:c1\"): tool call \"c1\" already has a stored result, and this one differs from it (a call has one result; the stored one is \"42\")"}`
	if code != 400 || strings.TrimSpace(body) != want {
		t.Fatalf("conflicting result: %d %s", code, body)
	}
	if got := toolResults(t, e.store, "s1"); got != "c1=42" {
		t.Fatalf("stored tool results: %s", got)
	}
	if runs, _ := e.store.Runs(context.Background(), "s1"); len(runs) != 1 {
		t.Fatalf("runs: %+v", runs)
	}
}

// A user message the session stores, resent: by the id MESSAGES_SNAPSHOT gave it
// (THREAD:entry:SEQ) with other text it is a 400; after a run that failed before the
// model answered, the client's retry with the same message runs on the stored one
// instead of storing it twice; once answered, the same text is a new message.
func TestResentUserMessages(t *testing.T) {
	e := newTestEnv(t, envOptions{}, turn{err: &loop.ModelError{Kind: loop.KindAuth, Message: "provider down"}}, turn{text: "Hello."}, turn{text: "Hello again."})
	body := `{"threadId":"s1","runId":"%s","messages":[{"id":"u1","role":"user","content":"%s"}]}`
	evs := e.run(t, fmt.Sprintf(body, "r1", "hi"))
	if got := brief(evs); !strings.HasPrefix(got[len(got)-1], "RUN_ERROR") {
		t.Fatalf("run 1: %v", got)
	}
	entries, _ := e.store.Load(context.Background(), "s1")
	var seq int64
	for _, en := range entries {
		if en.Message != nil && en.Message.Role == loop.RoleUser {
			seq = en.Seq
		}
	}
	code, resp := e.request(t, "POST", "/v1/runs", fmt.Sprintf(`{"threadId":"s1","runId":"r2","messages":[{"id":"s1:entry:%d","role":"user","content":"bye"}]}`, seq))
	want := fmt.Sprintf(`{"error":"invalid RunAgentInput: messages[0] (id \"s1:entry:%d\"): names the stored message %d, whose text differs (a stored message cannot be changed)"}`, seq, seq)
	if code != 400 || strings.TrimSpace(resp) != want {
		t.Fatalf("changed stored message: %d %s", code, resp)
	}
	evs = e.run(t, fmt.Sprintf(body, "r3", "hi"))
	if got := brief(evs); got[len(got)-1] != "RUN_FINISHED success completed/end_turn" {
		t.Fatalf("retry: %v", got)
	}
	evs = e.run(t, fmt.Sprintf(body, "r4", "hi"))
	if got := brief(evs); got[len(got)-1] != "RUN_FINISHED success completed/end_turn" {
		t.Fatalf("the same text again: %v", got)
	}
	entries, _ = e.store.Load(context.Background(), "s1")
	var conv []string
	for _, en := range entries {
		if en.Message != nil {
			conv = append(conv, string(en.Message.Role)+":"+en.Message.Text())
		}
	}
	if got := strings.Join(conv, " "); got != "system:You add. user:hi assistant:Hello. user:hi assistant:Hello again." {
		t.Fatalf("stored conversation: %s", got)
	}
}

// A call id names the newest call with that id: a model that numbers its calls the same
// way in every answer (call_0…) gets its client tool's new result stored, not taken for
// an echo of (or a conflict with) the result of an earlier call with the same id.
func TestL16_ReusedCallIDIsANewCall(t *testing.T) {
	ask := func(text string) turn {
		return turn{text: text, calls: []loop.ToolCall{{ID: "call_0", Name: "confirm", Arguments: `{}`}}}
	}
	e := newTestEnv(t, envOptions{}, ask("Asking."), turn{text: "Thanks."}, ask("Asking again."), turn{text: "Thanks again."})
	for i, answer := range []string{"yes", "no"} {
		start := fmt.Sprintf(`{"threadId":"s1","runId":"r%d",%s,"messages":[{"id":"u%d","role":"user","content":"ask me"}]}`, 2*i+1, confirmTool, i)
		if got := brief(e.run(t, start)); got[len(got)-1] != "RUN_FINISHED <nil> interrupted/client_tool_call" {
			t.Fatalf("run %d: %v", 2*i+1, got)
		}
		answer := fmt.Sprintf(`{"threadId":"s1","runId":"r%d",%s,"messages":[{"id":"t%d","role":"tool","toolCallId":"call_0","content":%q}]}`, 2*i+2, confirmTool, i, answer)
		if got := brief(e.run(t, answer)); got[len(got)-1] != "RUN_FINISHED success completed/end_turn" {
			t.Fatalf("run %d: %v", 2*i+2, got)
		}
	}
	if got := toolResults(t, e.store, "s1"); got != "call_0=yes call_0=no" {
		t.Fatalf("stored tool results: %s", got)
	}
}
