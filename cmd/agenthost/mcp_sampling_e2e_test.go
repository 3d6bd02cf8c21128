package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/loop"
)

// samplingEnv is an agent whose model calls server-everything's trigger-sampling-request;
// the server asks the client's model (sampling/createMessage) during that call.
func samplingEnv(t *testing.T, agentExtra, entryExtra string, firstTokens int) *agentEnv {
	t.Helper()
	return samplingEnvSaying(t, agentExtra, entryExtra, firstTokens, "say hi", "say hi", "hi from the host model")
}

// samplingEnvSaying is samplingEnv whose model asks the server to sample prompt, and
// answers the sampling request, which must contain seen, with answer.
func samplingEnvSaying(t *testing.T, agentExtra, entryExtra string, firstTokens int, prompt, seen, answer string) *agentEnv {
	t.Helper()
	dir := npmMCP(t)
	e := newEnv(t, agentExtra, "", [2]string{"scripted", `{"per_session": false, "turns": [
	  {"usage": {"prompt_tokens": ` + fmt.Sprint(firstTokens) + `, "completion_tokens": 1}, "tool_calls": [{"id": "c1", "name": "trigger-sampling-request", "arguments": "{\"prompt\":\"` + prompt + `\",\"maxTokens\":50}"}]},
	  {"expect": {"tools_offered": false, "contains": "` + seen + `"}, "usage": {"prompt_tokens": 500, "completion_tokens": 50}, "text": "` + answer + `"},
	  {"usage": {"prompt_tokens": 10, "completion_tokens": 1}, "text": "{{result c1}}"}]}`})
	f, _ := os.OpenFile(e.manifest, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "\n[[mcp_servers]]\nname = \"everything\"\ncommand = [\"node\", %q]\ntools = [\"trigger-sampling-request\", \"echo\"]\n%s",
		filepath.Join(dir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"), entryExtra)
	f.Close()
	return e
}

// An MCP server's sampling request is answered by the agent's model through the host's
// one create_message path and charged to the run that made the tool call: the run's
// usage holds its own two model calls and the server's.
func TestE2E_MCPServerSamplingIsAnsweredByTheHostModelAndChargedToTheRun(t *testing.T) {
	e := samplingEnv(t, "", "sampling = true\n", 10)
	r := e.agenthost(t, "run", "--json", "go")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	var result string
	var fin loop.RunFinishedData
	for _, ev := range events(t, r.stdout) {
		switch d := ev.Data.(type) {
		case *loop.ToolResultData:
			result = d.Content
		case *loop.RunFinishedData:
			fin = *d
		}
	}
	if !strings.Contains(result, "hi from the host model") {
		t.Fatalf("the tool's result %q does not hold the sampled answer\n%s", result, r.stderr)
	}
	if fin.Status != loop.StatusCompleted || fin.Usage.TotalTokens != 11+550+11 {
		t.Fatalf("run %s with %d tokens, want completed with 572 (its two calls and the server's)", fin.Status, fin.Usage.TotalTokens)
	}
}

// An MCP server's sampling request takes the same door as a plugin's create_message:
// the prompt passes the input guardrails (the model is asked for "[email]"), the answer
// the output guardrails (the server gets "[phone]"; the run's tool_result stage is off,
// so only the sampling's guardrail can have cleaned it), and the sampling is a run of its
// own, audited for the run's user with the server as the caller, and traced (an
// invoke_agent span naming the user) under the run that made the tool call.
func TestE2E_MCPServerSamplingPassesTheGuardrailsAndIsAuditedAndTraced(t *testing.T) {
	recv := newOTLPReceiver(t)
	e := samplingEnvSaying(t, "", "sampling = true\n", 10, "write to bob@example.com", "write to [email]", "call +1 415 555 0100")
	appendManifest(t, e.manifest, "\n[redact]\nstages = [\"input\", \"output\"]\n")
	e.withTelemetry(t, recv.srv.URL)
	r := e.agenthost(t, "run", "--user", "ana", "--json", "go")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	var result string
	for _, ev := range events(t, r.stdout) {
		if d, ok := ev.Data.(*loop.ToolResultData); ok {
			result = d.Content
		}
	}
	if !strings.Contains(result, "call [phone]") || strings.Contains(result, "555") {
		t.Fatalf("the tool's result %q does not hold the guarded answer\n%s", result, r.stderr)
	}
	var sampling []audit.Record
	for _, rec := range auditRecords(t, e) {
		if rec.Detail["sampling"] == "mcp:everything" {
			sampling = append(sampling, rec)
		}
	}
	if len(sampling) != 1 || sampling[0].Action != audit.ActionRunStart || sampling[0].Actor != "ana" || sampling[0].Detail["calling_session"] == "" {
		t.Fatalf("the sampling's audit records: %+v", sampling)
	}
	spans := waitSpans(t, recv, 0)
	for len(spans) < 2 { // the run's and the sampling's
		spans = append(spans, waitSpans(t, recv, len(spans))...)
	}
	for _, sp := range spans {
		if who := spanAttr(sp, "enduser.id"); who != "ana" {
			t.Errorf("span %s names enduser.id %q, want ana", sp.Name, who)
		}
	}
	var roots int
	for _, sp := range spans {
		if len(sp.ParentSpanId) == 0 {
			roots++
		}
	}
	if len(spans) != 2 || roots != 1 {
		t.Errorf("%d invoke_agent spans, %d of them roots: want the run's and the sampling's under it", len(spans), roots)
	}
}

// Sampling the run's budget cannot pay for is refused before the model is asked; and
// a server without sampling = true is not told the client can sample (the reference
// server then does not even offer its sampling tool).
func TestE2E_MCPServerSamplingIsBoundedByTheRunsBudgetAndOffOnlyWhenAsked(t *testing.T) {
	e := samplingEnv(t, "max_tokens = 1010", "sampling = true\n", 1000) // 9 tokens left after the first call
	r := e.agenthost(t, "run", "--json", "go")
	var result string
	for _, ev := range events(t, r.stdout) {
		if d, ok := ev.Data.(*loop.ToolResultData); ok {
			result = d.Content
		}
	}
	if !strings.Contains(result, "sampling refused") {
		t.Fatalf("over the budget, the tool's result is %q\n%s", result, r.stderr)
	}
	off := samplingEnv(t, "", "", 10)
	list := off.agenthost(t, "plugins", "list")
	if list.code == 0 || !strings.Contains(list.stderr, `mcp server "everything" has no tool "trigger-sampling-request" (tools lists it); it offers: `) {
		t.Fatalf("without sampling = true the server still offered its sampling tool:\n%s\n%s", list.stdout, list.stderr)
	}
}

// An MCP server's elicitation, answered over AG-UI: the served run ends with an
// interrupt carrying the server's message and form schema; the client resumes with the
// fields, the call runs again and the server gets them (checked against its schema).
func TestE2E_MCPServerElicitationIsAnsweredOverAGUI(t *testing.T) {
	dir := npmMCP(t)
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "trigger-elicitation-request", "arguments": "{}"}]},
	  {"expect": {"last_role": "tool"}, "text": "{{result c1}}"}]}`})
	f, _ := os.OpenFile(e.manifest, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "\n[[mcp_servers]]\nname = \"everything\"\ncommand = [\"node\", %q]\ntools = [\"trigger-elicitation-request\"]\nelicitation = true\n",
		filepath.Join(dir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
	f.Close()
	s := e.serve(t)
	run := startSSE(t, s.postRun(t, "el", "r1", "fill in the form"))
	fin := run.until(t, "RUN_FINISHED")
	oc, _ := fin["outcome"].(map[string]any)
	ints, _ := oc["interrupts"].([]any)
	if oc["type"] != "interrupt" || len(ints) != 1 {
		t.Fatalf("first run: %v", fin)
	}
	in := ints[0].(map[string]any)
	md, _ := in["metadata"].(map[string]any)
	schema, _ := md["schema"].(map[string]any)
	if in["id"] != "c1" || in["reason"] != "input_required" || in["message"] != "Please provide inputs for the following fields:" || schema["required"] == nil {
		t.Fatalf("interrupt %v", in)
	}
	resume := func(runID, payload string) map[string]any {
		r := startSSE(t, post(t, s.base+"/v1/runs", `{"threadId":"el","runId":"`+runID+`","messages":[],"resume":[{"interruptId":"c1","status":"resolved","payload":`+payload+`}]}`))
		return r.until(t, "RUN_FINISHED")
	}
	fin = resume("r2", `{"approved":true,"input":{"name":"Ana","check":true}}`)
	res, _ := fin["result"].(map[string]any)
	text := fmt.Sprint(res["text"])
	if res["status"] != "completed" || !strings.Contains(text, "User provided the requested information") || !strings.Contains(text, "Ana") {
		t.Fatalf("resumed run: %v", fin)
	}
}

// At a terminal, an MCP server's elicitation is asked at once, field by field, while
// the call waits: the answers (typed as the schema says; a boolean that does not read as
// one is asked again) reach the server in the same call.
func TestE2E_MCPServerElicitationIsAskedAtTheTerminal(t *testing.T) {
	dir := npmMCP(t)
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "trigger-elicitation-request", "arguments": "{}"}]},
	  {"expect": {"last_role": "tool"}, "text": "{{result c1}}"}]}`})
	f, _ := os.OpenFile(e.manifest, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "\n[[mcp_servers]]\nname = \"everything\"\ncommand = [\"node\", %q]\ntools = [\"trigger-elicitation-request\"]\nelicitation = true\n",
		filepath.Join(dir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
	f.Close()
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", e.manifest, "run", "fill in the form")
	cmd.Dir = e.dir
	// The fields come by name: birthdate, check, email, firstLine, homepage, integer,
	// legacyTitledEnum, name, then five more.
	cmd.Stdin = strings.NewReader("y\n" + "\n" + "maybe\ny\n" + strings.Repeat("\n", 5) + "Ana\n" + strings.Repeat("\n", 5))
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, out.String(), errb.String())
	}
	if !strings.Contains(errb.String(), "? trigger-elicitation-request asks: Please provide inputs for the following fields:") ||
		!strings.Contains(errb.String(), "not a boolean") {
		t.Fatalf("the prompts:\n%s", errb.String())
	}
	if !strings.Contains(out.String(), "User provided the requested information") || !strings.Contains(out.String(), "Ana") {
		t.Fatalf("the answer did not reach the server:\n%s\n%s", out.String(), errb.String())
	}
}
