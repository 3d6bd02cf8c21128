package server

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const aguiFixture = `{"per_session": true, "turns": [
  {"expect": {"last_role": "user", "contains": "17*23"}, "text": "Let me compute.",
   "tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"17*23\"}"}], "args_chunk": 8},
  {"expect": {"last_role": "tool"}, "text": "17*23 = {{result c1}}", "chunk": 8},
  {"expect": {"last_role": "user", "contains": "19*29"},
   "tool_calls": [{"id": "c2", "name": "calc", "arguments": "{\"expression\":\"19*29\"}"}]},
  {"expect": {"last_role": "tool"}, "text": "Not computed."}
]}`

// TestOfficialAGUIClient runs the official TypeScript client (@ag-ui/client 1.0.0, in
// testdata/agui-client, installed by `npm ci` from scripts/deps.d/serve.sh) against a
// served host with the scripted provider and the calc Wasm plugin: a tool call needing
// approval interrupts the run (its arguments streamed in three pieces), a resume
// approves it (the resumed runs start with MESSAGES_SNAPSHOT, whose ids match the
// client's, so its conversation stays exactly as assembled), a second one is cancelled. The
// client verifies the event order and validates each event against @ag-ui/core's
// schemas, so an event with a wrong field fails the run in node.
func TestOfficialAGUIClient(t *testing.T) {
	clientDir, _ := filepath.Abs("testdata/agui-client")
	if _, err := os.Stat(filepath.Join(clientDir, "node_modules/@ag-ui/client")); err != nil {
		t.Fatalf("@ag-ui/client is not installed: run `make deps` (npm ci in %s): %v", clientDir, err)
	}
	manifest := writeManifest(t, t.TempDir(), aguiFixture, `require_approval = ["calc"]`, false)
	_, ts := serveHost(t, manifest, "tok-123")

	cmd := exec.Command("node", "client.mjs", ts.URL, "tok-123", "thread-1")
	cmd.Dir = clientDir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node client: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
	}
	var out struct {
		Runs []struct {
			RunID             string           `json:"runId"`
			Events            []map[string]any `json:"events"`
			PendingInterrupts []string         `json:"pendingInterrupts"`
		} `json:"runs"`
		Messages []string `json:"messages"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("client output: %v\n%s", err, stdout.String())
	}
	if len(out.Runs) != 4 {
		t.Fatalf("%d runs", len(out.Runs))
	}
	want := [][]string{
		{
			"RUN_STARTED",
			"TEXT_MESSAGE_START", `TEXT_MESSAGE_CONTENT "Let me compute."`, "TEXT_MESSAGE_END",
			"TOOL_CALL_START c1 calc", `TOOL_CALL_ARGS "{\"expres"`, `TOOL_CALL_ARGS "sion\":\"1"`, `TOOL_CALL_ARGS "7*23\"}"`, "TOOL_CALL_END",
			"CUSTOM agenthost.usage",
			"STEP_STARTED tool:c1", "STEP_FINISHED tool:c1",
			"RUN_FINISHED interrupt interrupted/approval_required interrupt:c1",
		},
		{
			"RUN_STARTED", "MESSAGES_SNAPSHOT user:u1 assistant:run-1:msg:0",
			"STEP_STARTED tool:c1", `TOOL_CALL_RESULT c1 "391"`, "STEP_FINISHED tool:c1",
			"TEXT_MESSAGE_START", `TEXT_MESSAGE_CONTENT "17*23 = "`, `TEXT_MESSAGE_CONTENT "391"`, "TEXT_MESSAGE_END",
			"CUSTOM agenthost.usage",
			"RUN_FINISHED success completed/end_turn",
		},
		{
			"RUN_STARTED",
			"MESSAGES_SNAPSHOT user:u1 assistant:run-1:msg:0 tool:run-2:result:c1 assistant:run-2:msg:0 user:u2",
			"TOOL_CALL_START c2 calc", `TOOL_CALL_ARGS "{\"expression\":\"19*29\"}"`, "TOOL_CALL_END",
			"CUSTOM agenthost.usage",
			"STEP_STARTED tool:c2", "STEP_FINISHED tool:c2",
			"RUN_FINISHED interrupt interrupted/approval_required interrupt:c2",
		},
		{
			"RUN_STARTED",
			"MESSAGES_SNAPSHOT user:u1 assistant:run-1:msg:0 tool:run-2:result:c1 assistant:run-2:msg:0 user:u2 assistant:run-3:msg:0",
			"STEP_STARTED tool:c2", `TOOL_CALL_RESULT c2 "Error: tool call rejected: cancelled by the user"`, "STEP_FINISHED tool:c2",
			"TEXT_MESSAGE_START", `TEXT_MESSAGE_CONTENT "Not computed."`, "TEXT_MESSAGE_END",
			"CUSTOM agenthost.usage",
			"RUN_FINISHED success completed/end_turn",
		},
	}
	wantPending := []string{"c1", "", "c2", ""}
	for i, r := range out.Runs {
		equalLines(t, r.RunID, brief(r.Events), want[i])
		if got := strings.Join(r.PendingInterrupts, ","); got != wantPending[i] {
			t.Errorf("%s: client's pending interrupts %q, want %q", r.RunID, got, wantPending[i])
		}
	}
	// The client assembled the conversation from the events.
	equalLines(t, "client messages", out.Messages, []string{
		"user: What is 17*23?",
		`assistant: Let me compute. calls c1:calc{"expression":"17*23"}`,
		"tool: 391",
		"assistant: 17*23 = 391",
		"user: And 19*29?",
		`assistant: "" calls c2:calc{"expression":"19*29"}`,
		"tool: Error: tool call rejected: cancelled by the user",
		"assistant: Not computed.",
	})
}

// The model's second call must carry five messages (system, user, the assistant's two
// calls, one result each): a sixth, the client's echo of c1's result, fails the call.
const aguiResumeFixture = `{"per_session": true, "turns": [
  {"expect": {"last_role": "user", "contains": "6*7"}, "text": "Computing, then asking.",
   "tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}, {"id": "c2", "name": "confirm", "arguments": "{}"}]},
  {"expect": {"last_role": "tool", "messages": 5}, "text": "6*7 = {{result c1}}, as you confirmed."}
]}`

// L16 with the official client (testdata/agui-client/resume.mjs): one answer calls calc
// (run by the server, streamed as TOOL_CALL_RESULT, which HttpAgent keeps as a tool
// message) and the client's confirm tool. Resuming, HttpAgent sends its whole
// conversation, the echo of calc's result beside its answer to confirm; the server
// recognises the echo, so the model receives each result once and the session stores
// each once.
func TestL16_OfficialAGUIClientResumeSendsNoDuplicateToolResult(t *testing.T) {
	clientDir, _ := filepath.Abs("testdata/agui-client")
	if _, err := os.Stat(filepath.Join(clientDir, "node_modules/@ag-ui/client")); err != nil {
		t.Fatalf("@ag-ui/client is not installed: run `make deps` (npm ci in %s): %v", clientDir, err)
	}
	srv, ts := serveHost(t, writeManifest(t, t.TempDir(), aguiResumeFixture, "", false), "tok-123")

	cmd := exec.Command("node", "resume.mjs", ts.URL, "tok-123", "thread-r")
	cmd.Dir = clientDir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node client: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
	}
	var out struct {
		Runs []struct {
			RunID  string           `json:"runId"`
			Events []map[string]any `json:"events"`
			Input  []string         `json:"input"`
		} `json:"runs"`
		Messages []string `json:"messages"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || len(out.Runs) != 2 {
		t.Fatalf("client output: %v\n%s", err, stdout.String())
	}
	first, second := brief(out.Runs[0].Events), brief(out.Runs[1].Events)
	if !strings.Contains(strings.Join(first, "\n"), `TOOL_CALL_RESULT c1 "42"`) || first[len(first)-1] != "RUN_FINISHED <nil> interrupted/client_tool_call" {
		t.Fatalf("run-1:\n  %s", strings.Join(first, "\n  "))
	}
	// The echo was sent: the client's copy of c1's result, then its answer to c2.
	if got := strings.Join(out.Runs[1].Input, " "); !strings.HasSuffix(got, "tool:c1 tool:c2") {
		t.Fatalf("run-2's input was %s; the scenario needs the echo of c1", got)
	}
	if second[len(second)-1] != "RUN_FINISHED success completed/end_turn" {
		t.Fatalf("run-2 (a duplicate result fails the model's expect.messages):\n  %s", strings.Join(second, "\n  "))
	}
	if got := toolResults(t, srv.opts.Store, "thread-r"); got != "c1=42 c2=confirmed" {
		t.Fatalf("stored tool results: %s", got)
	}
	equalLines(t, "client messages", out.Messages, []string{
		"user: What is 6*7? Confirm it with me.",
		"assistant: Computing, then asking. calls c1:calc,c2:confirm",
		"tool(c1): 42",
		"tool(c2): confirmed",
		"assistant: 6*7 = 42, as you confirmed.",
	})
}
