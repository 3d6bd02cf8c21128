package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// The reference server's resources reach the agent through the built-in tools: the
// model lists them (templates included) and reads one built from a template; and one of
// its prompts, with an argument, is the start of a run (run --prompt).
func TestE2E_MCPServerResourcesAreToolsAndPromptsStartRuns(t *testing.T) {
	dir := npmMCP(t)
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "l1", "name": "mcp_resources", "arguments": "{\"server\":\"everything\"}"}]},
	  {"tool_calls": [{"id": "r1", "name": "mcp_read_resource", "arguments": "{\"server\":\"everything\",\"uri\":\"demo://resource/dynamic/text/7\"}"}]},
	  {"tool_calls": [{"id": "r2", "name": "mcp_read_resource", "arguments": "{\"server\":\"ghost\",\"uri\":\"demo://x\"}"}]},
	  {"text": "read"}]}`},
		[2]string{"prompted", `{"turns": [{"expect": {"contains": "What's weather in Lisbon?"}, "text": "sunny"}]}`})
	f, _ := os.OpenFile(e.manifest, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "\n[[mcp_servers]]\nname = \"everything\"\ncommand = [\"node\", %q]\ntools = [\"echo\"]\n",
		filepath.Join(dir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
	f.Close()
	r := e.agenthost(t, "run", "--json", "what is there?")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	results := map[string]loop.ToolResultData{}
	for _, ev := range events(t, r.stdout) {
		if d, ok := ev.Data.(*loop.ToolResultData); ok {
			results[d.ID] = *d
		}
	}
	if l := results["l1"]; l.IsError || !strings.Contains(l.Content, `"uri_template":"demo://resource/dynamic/text/{resourceId}"`) || !strings.Contains(l.Content, `demo://resource/static/document/`) {
		t.Fatalf("mcp_resources: %+v", l)
	}
	if r1 := results["r1"]; r1.IsError || !strings.Contains(r1.Content, "Resource 7: This is a plaintext resource") {
		t.Fatalf("mcp_read_resource: %+v", r1)
	}
	if r2 := results["r2"]; !r2.IsError || !strings.Contains(r2.Content, "invalid arguments") {
		t.Fatalf("a server that is not offered: %+v", r2)
	}
	p := e.agenthost(t, "run", "--provider", "prompted", "--prompt", "args-prompt", "--prompt-arg", "city=Lisbon")
	if p.code != 0 || !strings.Contains(p.stdout, "sunny") {
		t.Fatalf("run --prompt: %d\n%s\n%s", p.code, p.stdout, p.stderr)
	}
	bad := e.agenthost(t, "run", "--prompt", "nope/args-prompt")
	if bad.code == 0 || !strings.Contains(bad.stderr, `prompt "nope/args-prompt": name it SERVER/NAME (MCP servers with prompts: everything)`) {
		t.Fatalf("an unknown server: %d %s", bad.code, bad.stderr)
	}
}

// A server's progress during a call is a progress event of the run that made it (the
// two calls run one after the other, each with a token of its own); the
// entry's roots are what the server is told (file:// URIs of the directories).
func TestE2E_MCPServerProgressReachesTheRunAndRootsTheServer(t *testing.T) {
	dir := npmMCP(t)
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "p1", "name": "trigger-long-running-operation", "arguments": "{\"duration\":0.2,\"steps\":2}"},
	                  {"id": "g1", "name": "get-roots-list", "arguments": "{}"}]},
	  {"text": "done"}]}`})
	os.MkdirAll(filepath.Join(e.dir, "work"), 0o755)
	f, _ := os.OpenFile(e.manifest, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "\n[[mcp_servers]]\nname = \"everything\"\ncommand = [\"node\", %q]\ntools = [\"trigger-long-running-operation\", \"get-roots-list\"]\nroots = [\"work\"]\n",
		filepath.Join(dir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
	f.Close()
	r := e.agenthost(t, "run", "--json", "go")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	var progress []string
	results := map[string]string{}
	for _, ev := range events(t, r.stdout) {
		switch d := ev.Data.(type) {
		case *loop.ProgressData:
			progress = append(progress, fmt.Sprintf("%s %v/%v", d.Plugin, d.Progress, d.Total))
		case *loop.ToolResultData:
			results[d.ID] = d.Content
		}
	}
	// The server sends its last progress just before its result; a notification that
	// arrives after the call returned is dropped, so the last one may be missing.
	if got := strings.Join(progress, ","); got != "mcp:everything 1/2,mcp:everything 2/2" && got != "mcp:everything 1/2" {
		t.Fatalf("progress events %v\n%s", progress, r.stderr)
	}
	want, _ := filepath.Abs(filepath.Join(e.dir, "work"))
	if !strings.Contains(results["g1"], "file://"+want) {
		t.Fatalf("roots the server saw: %q", results["g1"])
	}
}
