package server

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// translateAll runs loop events through a Translator and renders the AG-UI JSON.
func translateAll(t *testing.T, evs ...loop.Event) []string {
	t.Helper()
	tr := newTranslator("ses1", "run1")
	var out []string
	for _, e := range evs {
		for _, a := range tr.Translate(e) {
			b, err := json.Marshal(a)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(b))
		}
	}
	return out
}

var t0 = time.UnixMilli(1_700_000_000_000)

func ev[T any](typ loop.EventType, data T) loop.Event {
	return loop.Event{Time: t0, SessionID: "ses1", RunID: "run1", Type: typ, Data: &data}
}

func TestTranslateFailedRunClosesOpenMessageAndEndsWithRunError(t *testing.T) {
	got := translateAll(t,
		ev(loop.EventRunStarted, loop.RunStartedData{Model: "m"}),
		ev(loop.EventModelDelta, loop.ModelDeltaData{Kind: loop.DeltaText, Text: "Hel"}),
		ev(loop.EventError, loop.ErrorData{Kind: "auth", Message: "auth: bad key"}),
		ev(loop.EventRunFinished, loop.RunFinishedData{Status: loop.StatusFailed, Reason: loop.ReasonError}),
	)
	equalLines(t, "AG-UI events", got, []string{
		`{"type":"RUN_STARTED","timestamp":1700000000000,"threadId":"ses1","runId":"run1"}`,
		`{"type":"TEXT_MESSAGE_START","timestamp":1700000000000,"messageId":"run1:msg:0","role":"assistant"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","timestamp":1700000000000,"messageId":"run1:msg:0","delta":"Hel"}`,
		`{"type":"CUSTOM","timestamp":1700000000000,"name":"agenthost.error","value":{"kind":"auth","message":"auth: bad key","retryable":false}}`,
		`{"type":"TEXT_MESSAGE_END","timestamp":1700000000000,"messageId":"run1:msg:0"}`,
		`{"type":"RUN_ERROR","timestamp":1700000000000,"message":"auth: bad key","code":"error"}`,
	})
}

func TestTranslateUnstreamedMessageAndInterrupt(t *testing.T) {
	msg := loop.Message{Role: loop.RoleAssistant, Reasoning: "think", Content: []loop.Part{loop.TextPart("Let me write.")},
		ToolCalls: []loop.ToolCall{{ID: "c9", Name: "fs_write", Arguments: `{"path":"a"}`}}}
	got := translateAll(t,
		ev(loop.EventRunStarted, loop.RunStartedData{Model: "m"}),
		ev(loop.EventStatus, loop.StatusData{State: loop.StatePreparing}),
		ev(loop.EventReasoning, loop.TextData{Text: "think"}),
		ev(loop.EventText, loop.TextData{Text: "Let me write."}),
		ev(loop.EventAssistantMessage, loop.AssistantMessageData{Message: msg}),
		ev(loop.EventStepStart, loop.StepStartData{ID: "c9", Name: "fs_write"}),
		ev(loop.EventToolCall, loop.ToolCallData{ID: "c9", Name: "fs_write", Arguments: json.RawMessage(`{"path":"a"}`)}),
		ev(loop.EventApproval, loop.ToolCallData{ID: "c9", Name: "fs_write", Arguments: json.RawMessage(`{"path":"a"}`)}),
		ev(loop.EventRunFinished, loop.RunFinishedData{Status: loop.StatusInterrupted, Reason: loop.ReasonApprovalRequired,
			Usage: loop.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}}),
	)
	equalLines(t, "AG-UI events", got, []string{
		`{"type":"RUN_STARTED","timestamp":1700000000000,"threadId":"ses1","runId":"run1"}`,
		`{"type":"CUSTOM","timestamp":1700000000000,"name":"agenthost.status","value":{"state":"preparing"}}`,
		`{"type":"REASONING_START","timestamp":1700000000000,"messageId":"run1:reasoning:0"}`,
		`{"type":"REASONING_MESSAGE_START","timestamp":1700000000000,"messageId":"run1:reasoning:0","role":"reasoning"}`,
		`{"type":"REASONING_MESSAGE_CONTENT","timestamp":1700000000000,"messageId":"run1:reasoning:0","delta":"think"}`,
		`{"type":"REASONING_MESSAGE_END","timestamp":1700000000000,"messageId":"run1:reasoning:0"}`,
		`{"type":"REASONING_END","timestamp":1700000000000,"messageId":"run1:reasoning:0"}`,
		`{"type":"TEXT_MESSAGE_START","timestamp":1700000000000,"messageId":"run1:msg:0","role":"assistant"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","timestamp":1700000000000,"messageId":"run1:msg:0","delta":"Let me write."}`,
		`{"type":"TEXT_MESSAGE_END","timestamp":1700000000000,"messageId":"run1:msg:0"}`,
		`{"type":"TOOL_CALL_START","timestamp":1700000000000,"toolCallId":"c9","toolCallName":"fs_write","parentMessageId":"run1:msg:0"}`,
		`{"type":"TOOL_CALL_ARGS","timestamp":1700000000000,"toolCallId":"c9","delta":"{\"path\":\"a\"}"}`,
		`{"type":"TOOL_CALL_END","timestamp":1700000000000,"toolCallId":"c9"}`,
		`{"type":"STEP_STARTED","timestamp":1700000000000,"stepName":"tool:c9"}`,
		`{"type":"STEP_FINISHED","timestamp":1700000000000,"stepName":"tool:c9"}`,
		`{"type":"RUN_FINISHED","timestamp":1700000000000,"threadId":"ses1","runId":"run1","result":{"status":"interrupted","reason":"approval_required"},` +
			`"outcome":{"type":"interrupt","interrupts":[{"id":"c9","reason":"approval_required","message":"Allow fs_write {\"path\":\"a\"}?","toolCallId":"c9",` +
			`"metadata":{"arguments":{"path":"a"},"toolName":"fs_write"}}]},"usage":[{"model":"m","inputTokens":3,"outputTokens":4,"totalTokens":7}]}`,
	})
}

func TestRunInputTakesTrailingUserMessagesAndResume(t *testing.T) {
	in, err := runInput(RunAgentInput{ThreadID: "s", RunID: "r", Messages: []inputMessage{
		{ID: "1", Role: "user", Content: json.RawMessage(`"old"`)},
		{ID: "2", Role: "assistant", Content: json.RawMessage(`"answer"`)},
		{ID: "3", Role: "user", Content: json.RawMessage(`"new"`)},
		{ID: "4", Role: "user", Content: json.RawMessage(`[{"type":"text","text":"and more"},{"type":"image","source":{"type":"url","value":"http://x/a.png"}}]`)},
	}, Resume: []resumeEntry{
		{InterruptID: "c1", Status: "resolved", Payload: json.RawMessage(`true`)},
		{InterruptID: "c2", Status: "cancelled"},
		{InterruptID: "c3", Status: "resolved", Payload: json.RawMessage(`{"approved":false,"reason":"no"}`)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(struct {
		M []loop.Message
		A map[string]loop.Approval
	}{in.Messages, in.Approvals})
	want := `{"M":[{"role":"user","content":[{"type":"text","text":"new"}]},{"role":"user","content":[{"type":"text","text":"and more"},{"type":"image","url":"http://x/a.png"}]}],` +
		`"A":{"c1":{"Approved":true,"Reason":""},"c2":{"Approved":false,"Reason":"cancelled by the user"},"c3":{"Approved":false,"Reason":"no"}}}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}

func TestCheckAddrAndLoadToken(t *testing.T) {
	for _, c := range []struct {
		addr  string
		token bool
		want  string
	}{
		{"127.0.0.1:8080", false, ""},
		{"[::1]:8080", false, ""},
		{"localhost:0", false, ""},
		{"0.0.0.0:8080", false, "refusing to serve on 0.0.0.0:8080 without a token: set AGENTHOST_TOKEN or --token-file, or use a loopback address such as 127.0.0.1:8080"},
		{":8080", false, "refusing to serve on :8080 without a token: set AGENTHOST_TOKEN or --token-file, or use a loopback address such as 127.0.0.1:8080"},
		{"0.0.0.0:8080", true, ""},
	} {
		err := CheckAddr(c.addr, c.token)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("CheckAddr(%q, %v) = %q, want %q", c.addr, c.token, got, c.want)
		}
	}
	f := t.TempDir() + "/tok"
	if err := writeFile(f, " filetok\n"); err != nil {
		t.Fatal(err)
	}
	if tok, err := LoadToken("envtok", f); tok != "filetok" || err != nil {
		t.Errorf("LoadToken with file = %q, %v", tok, err)
	}
	if tok, err := LoadToken(" envtok ", ""); tok != "envtok" || err != nil {
		t.Errorf("LoadToken from env = %q, %v", tok, err)
	}
}

func TestTranslatePluginReportsAreCustomEvents(t *testing.T) {
	got := translateAll(t,
		ev(loop.EventPluginLog, loop.PluginLogData{Plugin: "files", Level: "warning", Message: "slow disk"}),
		ev(loop.EventProgress, loop.ProgressData{Plugin: "files", Progress: 1, Total: 3, Message: "one"}),
	)
	equalLines(t, "AG-UI events", got, []string{
		`{"type":"CUSTOM","timestamp":1700000000000,"name":"agenthost.plugin_log","value":{"plugin":"files","level":"warning","message":"slow disk"}}`,
		`{"type":"CUSTOM","timestamp":1700000000000,"name":"agenthost.progress","value":{"plugin":"files","progress":1,"total":3,"message":"one"}}`,
	})
}

func TestForwardedPropsCarryTheRunControls(t *testing.T) {
	base := RunAgentInput{ThreadID: "s", RunID: "r", Messages: []inputMessage{{ID: "1", Role: "user", Content: json.RawMessage(`"hi"`)}}}
	in := base
	in.ForwardedProps = json.RawMessage(`{"outputSchema":{"type":"object"},"tools":[],"toolChoice":"none","maxIterations":3,
		"system":"be brief","metadata":{"team":"ops"},"agent":"billing","somethingElse":{"kept":"by the client"}}`)
	got, err := runInput(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.OutputSchema) != `{"type":"object"}` || got.AllowedTools == nil || len(got.AllowedTools) != 0 ||
		got.ToolChoice != "none" || got.Limits.MaxIterations != 3 || got.SystemPromptOverride != "be brief" || got.Metadata["team"] != "ops" || got.Agent != "billing" {
		t.Fatalf("controls %+v", got)
	}
	if got, _ := runInput(base); got.AllowedTools != nil {
		t.Fatal("no tools key must mean every tool")
	}
	for props, want := range map[string]string{
		`{"maxIterations":-1}`:        "maxIterations -1",
		`{"outputSchema":"a string"}`: "outputSchema must be a JSON Schema object",
		`{"tools":"calc"}`:            "cannot unmarshal",
		`[1,2]`:                       "cannot unmarshal",
	} {
		in := base
		in.ForwardedProps = json.RawMessage(props)
		if _, err := runInput(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", props, err, want)
		}
	}
}

// AG-UI tools are the client's: they become the run's client tools, and the client's
// answer comes back as a trailing tool message with its toolCallId.
func TestClientToolsAndTheirResults(t *testing.T) {
	in, err := runInput(RunAgentInput{ThreadID: "s", RunID: "r",
		Tools: []clientTool{{Name: "pick_color", Description: "Ask the user", Parameters: json.RawMessage(`{"type":"object"}`)}},
		Messages: []inputMessage{
			{ID: "1", Role: "user", Content: json.RawMessage(`"choose"`)},
			{ID: "2", Role: "assistant", Content: json.RawMessage(`""`)},
			{ID: "3", Role: "tool", ToolCallID: "c1", Content: json.RawMessage(`"blue"`)},
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.ClientTools) != 1 || in.ClientTools[0].Name != "pick_color" || string(in.ClientTools[0].InputSchema) != `{"type":"object"}` {
		t.Fatalf("client tools %+v", in.ClientTools)
	}
	if len(in.Messages) != 1 || in.Messages[0].Role != loop.RoleTool || in.Messages[0].ToolCallID != "c1" || in.Messages[0].Text() != "blue" {
		t.Fatalf("messages %+v", in.Messages)
	}
	for _, bad := range []RunAgentInput{
		{ThreadID: "s", RunID: "r", Messages: []inputMessage{{ID: "3", Role: "tool", Content: json.RawMessage(`"x"`)}}},
		{ThreadID: "s", RunID: "r", Tools: []clientTool{{Name: ""}}, Messages: []inputMessage{{ID: "1", Role: "user", Content: json.RawMessage(`"x"`)}}},
		{ThreadID: "s", RunID: "r", Tools: []clientTool{{Name: "t", Parameters: json.RawMessage(`{oops`)}}, Messages: []inputMessage{{ID: "1", Role: "user", Content: json.RawMessage(`"x"`)}}},
	} {
		if _, err := runInput(bad); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
}

// A streamed call starts once its id and name are known: fragments that came before
// are sent with the start; later ones as they come. The finish delta ends the text and
// the streamed calls before assistant_message; a call the stream never named (no id)
// is sent whole with the message, under the id the loop gave it.
func TestTranslateStreamedToolCallsStartWhenNamed(t *testing.T) {
	frag := func(i int, id, name, args string) loop.Event {
		return ev(loop.EventModelDelta, loop.ModelDeltaData{Kind: loop.DeltaToolCall, Text: args,
			ToolCall: loop.ToolCallRef{Index: i, ID: id, Name: name}})
	}
	msg := loop.Message{Role: loop.RoleAssistant, Content: []loop.Part{loop.TextPart("On it.")}, ToolCalls: []loop.ToolCall{
		{ID: "c1", Name: "calc", Arguments: `{"e":"1+1"}`}, {ID: "call_1_1", Name: "echo", Arguments: `{}`}}}
	got := translateAll(t,
		ev(loop.EventModelDelta, loop.ModelDeltaData{Kind: loop.DeltaText, Text: "On it."}),
		frag(0, "", "", `{"e":`),
		frag(0, "c1", "calc", `"1+`),
		frag(1, "", "echo", `{}`),
		frag(0, "", "", `1"}`),
		ev(loop.EventModelDelta, loop.ModelDeltaData{Kind: loop.DeltaFinish, Text: "tool_use"}),
		ev(loop.EventAssistantMessage, loop.AssistantMessageData{Message: msg}),
		ev(loop.EventState, loop.StateData{State: json.RawMessage(`{"n":1}`)}),
	)
	equalLines(t, "AG-UI events", got, []string{
		`{"type":"TEXT_MESSAGE_START","timestamp":1700000000000,"messageId":"run1:msg:0","role":"assistant"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","timestamp":1700000000000,"messageId":"run1:msg:0","delta":"On it."}`,
		`{"type":"TEXT_MESSAGE_END","timestamp":1700000000000,"messageId":"run1:msg:0"}`,
		`{"type":"TOOL_CALL_START","timestamp":1700000000000,"toolCallId":"c1","toolCallName":"calc","parentMessageId":"run1:msg:0"}`,
		`{"type":"TOOL_CALL_ARGS","timestamp":1700000000000,"toolCallId":"c1","delta":"{\"e\":\"1+"}`,
		`{"type":"TOOL_CALL_ARGS","timestamp":1700000000000,"toolCallId":"c1","delta":"1\"}"}`,
		`{"type":"TOOL_CALL_END","timestamp":1700000000000,"toolCallId":"c1"}`,
		`{"type":"TOOL_CALL_START","timestamp":1700000000000,"toolCallId":"call_1_1","toolCallName":"echo","parentMessageId":"run1:msg:0"}`,
		`{"type":"TOOL_CALL_ARGS","timestamp":1700000000000,"toolCallId":"call_1_1","delta":"{}"}`,
		`{"type":"TOOL_CALL_END","timestamp":1700000000000,"toolCallId":"call_1_1"}`,
		`{"type":"STATE_SNAPSHOT","timestamp":1700000000000,"snapshot":{"n":1}}`,
	})
}

// A hand-off shows as a step named after the acting agent: the previous agent's step (if
// one is open) finishes, the details go in a CUSTOM event, and the new agent's step stays
// open until the run ends.
func TestTranslateHandoffIsAnAgentStep(t *testing.T) {
	got := translateAll(t,
		ev(loop.EventHandoff, loop.HandoffData{From: "triage", To: "billing", Depth: 1, Reason: "refund"}),
		ev(loop.EventHandoff, loop.HandoffData{From: "billing", To: "refunds", Depth: 2}),
		ev(loop.EventRunFinished, loop.RunFinishedData{Status: loop.StatusCompleted, Reason: loop.ReasonEndTurn}),
	)
	equalLines(t, "AG-UI events", got, []string{
		`{"type":"CUSTOM","timestamp":1700000000000,"name":"agenthost.handoff","value":{"from":"triage","to":"billing","depth":1,"reason":"refund"}}`,
		`{"type":"STEP_STARTED","timestamp":1700000000000,"stepName":"agent:billing"}`,
		`{"type":"STEP_FINISHED","timestamp":1700000000000,"stepName":"agent:billing"}`,
		`{"type":"CUSTOM","timestamp":1700000000000,"name":"agenthost.handoff","value":{"from":"billing","to":"refunds","depth":2}}`,
		`{"type":"STEP_STARTED","timestamp":1700000000000,"stepName":"agent:refunds"}`,
		`{"type":"STEP_FINISHED","timestamp":1700000000000,"stepName":"agent:refunds"}`,
		`{"type":"RUN_FINISHED","timestamp":1700000000000,"threadId":"ses1","runId":"run1","result":{"status":"completed","reason":"end_turn"},"outcome":{"type":"success"}}`,
	})
}

// A run that waits in the host's admission queue opens its stream with RUN_STARTED and
// its position, which it hears again as it moves up; the run's own run_started does not
// start it a second time.
func TestTranslateQueuedRunStartsOnceAndReportsItsPosition(t *testing.T) {
	got := translateAll(t,
		ev(loop.EventQueued, loop.QueuedData{Position: 2}),
		ev(loop.EventQueued, loop.QueuedData{Position: 1}),
		ev(loop.EventRunStarted, loop.RunStartedData{Model: "m"}),
		ev(loop.EventRunFinished, loop.RunFinishedData{Status: loop.StatusCompleted, Reason: loop.ReasonEndTurn}),
	)
	equalLines(t, "AG-UI events", got, []string{
		`{"type":"RUN_STARTED","timestamp":1700000000000,"threadId":"ses1","runId":"run1"}`,
		`{"type":"CUSTOM","timestamp":1700000000000,"name":"agenthost.queued","value":{"position":2}}`,
		`{"type":"CUSTOM","timestamp":1700000000000,"name":"agenthost.queued","value":{"position":1}}`,
		`{"type":"RUN_FINISHED","timestamp":1700000000000,"threadId":"ses1","runId":"run1","result":{"status":"completed","reason":"end_turn"},"outcome":{"type":"success"}}`,
	})
}

// A result the tool-result cache answered says so in its metadata, with its age; a fresh
// one carries no cached key.
func TestTranslateMarksACachedToolResult(t *testing.T) {
	got := translateAll(t,
		ev(loop.EventToolResult, loop.ToolResultData{ID: "c1", Name: "lookup", Content: "42", Cached: true, CacheAgeMS: 3000}),
		ev(loop.EventToolResult, loop.ToolResultData{ID: "c2", Name: "lookup", Content: "43", DurationMS: 7}),
	)
	equalLines(t, "AG-UI events", got, []string{
		`{"type":"TOOL_CALL_RESULT","timestamp":1700000000000,"messageId":"run1:result:c1","toolCallId":"c1","content":"42","role":"tool","metadata":{"cacheAgeMs":3000,"cached":true,"durationMs":0,"toolName":"lookup"}}`,
		`{"type":"TOOL_CALL_RESULT","timestamp":1700000000000,"messageId":"run1:result:c2","toolCallId":"c2","content":"43","role":"tool","metadata":{"durationMs":7,"toolName":"lookup"}}`,
	})
}
