package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// Issue 13, the CLI part: the prompt from words or stdin; --session must name a stored
// session unless --new; --tools limits the tools offered; --output-schema (and the
// manifest's output_schema) makes the answer structured; sessions list shows titles,
// statuses and costs; sessions rm deletes.
func TestE2E_RunControlsFromTheCLI(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"per_session": true, "turns": [
	  {"expect": {"contains": "what is two plus two"}, "tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"2+2\"}"}],
	   "usage": {"prompt_tokens": 1000000, "completion_tokens": 0, "cost_usd": 0.5}},
	  {"text": "{\"answer\": {{result c1}}}"},
	  {"text": "{\"answer\": 4}"}]}`})
	run := func(stdin string, args ...string) result {
		t.Helper()
		cmd := exec.Command(filepath.Join(binDir, "agenthost"), append([]string{"-c", e.manifest}, args...)...)
		cmd.Dir = e.dir
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return result{out.String(), errb.String(), code}
	}
	final := func(r result) loop.FinalData {
		t.Helper()
		for _, ev := range events(t, r.stdout) {
			if d, ok := ev.Data.(*loop.FinalData); ok {
				return *d
			}
		}
		t.Fatalf("no final: %s %s", r.stdout, r.stderr)
		return loop.FinalData{}
	}
	// Words, stdin, and "-".
	if r := run("", "run", "--json", "what", "is", "two", "plus", "two?"); r.code != 0 || final(r).Text != `{"answer": 4}` {
		t.Fatalf("words: %d %s", r.code, r.stderr)
	}
	if r := run("what is two plus two?\n", "run", "--json"); r.code != 0 {
		t.Fatalf("stdin: %d %s", r.code, r.stderr)
	}
	if r := run("what is two plus two?", "run", "--json", "-"); r.code != 0 {
		t.Fatalf("-: %d %s", r.code, r.stderr)
	}
	// An output schema: the answer is checked and carried as structured output (tools were
	// offered, so one more call with tools off and the schema on makes it: L10).
	schema := filepath.Join(e.dir, "schema.json")
	os.WriteFile(schema, []byte(`{"type":"object","properties":{"answer":{"type":"integer"}},"required":["answer"]}`), 0o644)
	if r := run("", "run", "--json", "--output-schema", schema, "what is two plus two?"); r.code != 0 || string(final(r).Output) != `{"answer":4}` {
		t.Fatalf("output schema: %d %q %s", r.code, final(r).Output, r.stderr)
	}
	bad := filepath.Join(e.dir, "bad.json")
	os.WriteFile(bad, []byte(`{"type":"object","required":["missing"]}`), 0o644)
	if r := run("", "run", "--json", "--output-schema", bad, "what is two plus two?"); r.code == 0 {
		t.Fatalf("an answer breaking the schema completed: %s", r.stdout)
	}
	// --tools: calc is not offered, so the model's call of it is an unknown tool.
	r := run("", "run", "--json", "--tools", "nothing", "what is two plus two?")
	if !strings.Contains(r.stdout, `Error: Unknown tool 'calc'`) {
		t.Fatalf("--tools: %s", r.stdout)
	}
	// --session must exist unless --new.
	if r := run("", "run", "--session", "mine", "what is two plus two?"); r.code != 2 || !strings.Contains(r.stderr, `no session "mine"`) {
		t.Fatalf("unknown session: %d %s", r.code, r.stderr)
	}
	if r := run("", "run", "--json", "--session", "mine", "--new", "what is two plus two?"); r.code != 0 || sessionOf(t, events(t, r.stdout)) != "mine" {
		t.Fatalf("--new: %d %s", r.code, r.stderr)
	}
	if r := run("", "run", "--meta", "novalue", "x"); r.code != 2 || !strings.Contains(r.stderr, "want KEY=VALUE") {
		t.Fatalf("--meta: %d %s", r.code, r.stderr)
	}
	list := run("", "sessions", "list")
	if !strings.Contains(list.stdout, "mine") || !strings.Contains(list.stdout, "what is two plus two?") ||
		!strings.Contains(list.stdout, "completed") || !strings.Contains(list.stdout, "$0.5000") {
		t.Fatalf("sessions list:\n%s", list.stdout)
	}
	if r := run("", "sessions", "rm", "mine"); r.code != 0 {
		t.Fatalf("rm: %d %s", r.code, r.stderr)
	}
	if r := run("", "sessions", "show", "mine"); !strings.Contains(r.stdout+r.stderr, "mine") && r.code == 0 {
		t.Fatalf("show after rm: %d %s", r.code, r.stdout)
	}
	if r := run("", "sessions", "rm", "mine"); r.code != 2 {
		t.Fatalf("rm twice: %d", r.code)
	}
}

// The manifest's output_schema and allowed_tools are the runs' defaults.
func TestE2E_ManifestRunDefaults(t *testing.T) {
	e := newEnv(t, `output_schema = { type = "object", properties = { answer = { type = "integer" } }, required = ["answer"] }`+"\nallowed_tools = []", "",
		[2]string{"scripted", `{"turns": [{"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"2+2\"}"}]},
	  {"text": "{\"answer\": 4}"}]}`})
	r := e.agenthost(t, "run", "--json", "go")
	if r.code != 0 || !strings.Contains(r.stdout, `Error: Unknown tool 'calc'`) || !strings.Contains(r.stdout, `"output":{"answer":4}`) {
		t.Fatalf("defaults: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// The same controls over HTTP, in AG-UI's forwardedProps.
func TestE2E_ServeRunControlsInForwardedProps(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"2+2\"}"}]},
	  {"text": "{\"answer\": 4}"}]}`})
	s := e.serve(t)
	body := `{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":"go"}],
	  "forwardedProps":{"tools":[],"outputSchema":{"type":"object","required":["answer"]}}}`
	resp, err := http.Post(s.base+"/v1/runs", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	out := string(b)
	if !strings.Contains(out, `Error: Unknown tool 'calc'`) || !strings.Contains(out, `"status":"completed","reason":"structured_output"`) {
		t.Fatalf("forwardedProps controls:\n%s", out)
	}
	resp, _ = http.Post(s.base+"/v1/runs", "application/json", strings.NewReader(
		`{"threadId":"t2","runId":"r2","messages":[{"id":"m","role":"user","content":"go"}],"forwardedProps":{"maxIterations":-4}}`))
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad controls: %d", resp.StatusCode)
	}
}

// AG-UI frontend tools: the model's call of one ends the run for the client to answer;
// the next run carries the answer as a tool message and the model goes on.
func TestE2E_ServeClientToolsRoundTrip(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "pick_color", "arguments": "{\"options\":[\"red\",\"blue\"]}"}]},
	  {"expect": {"last_role": "tool"}, "text": "You picked {{result c1}}."}]}`})
	s := e.serve(t)
	post := func(body string) string {
		t.Helper()
		resp, err := http.Post(s.base+"/v1/runs", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return string(b)
	}
	tools := `"tools":[{"name":"pick_color","description":"Ask the user to pick a colour","parameters":{"type":"object"}}]`
	out := post(`{"threadId":"t","runId":"r1",` + tools + `,"messages":[{"id":"m1","role":"user","content":"choose"}]}`)
	if !strings.Contains(out, `"type":"TOOL_CALL_START","timestamp"`) || !strings.Contains(out, `"toolCallName":"pick_color"`) ||
		!strings.Contains(out, `"status":"interrupted","reason":"client_tool_call"`) || strings.Contains(out, "TOOL_CALL_RESULT") {
		t.Fatalf("run 1:\n%s", out)
	}
	out = post(`{"threadId":"t","runId":"r2",` + tools + `,"messages":[{"id":"m1","role":"user","content":"choose"},
	  {"id":"a1","role":"assistant","content":""},{"id":"t1","role":"tool","toolCallId":"c1","content":"blue"}]}`)
	if !strings.Contains(out, `"status":"completed"`) || !strings.Contains(out, `"text":"You picked blue."`) {
		t.Fatalf("run 2:\n%s", out)
	}
}
