package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// npmMCP is the npm package of the MCP tests (installed by `make deps`).
func npmMCP(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(repoRoot, "cmd/agenthost/testdata/mcp-npm")
	if _, err := os.Stat(filepath.Join(dir, "node_modules/@modelcontextprotocol/sdk")); err != nil {
		t.Fatalf("the MCP npm packages are missing: run `make deps` (%v)", err)
	}
	return dir
}

// The official MCP TypeScript client lists and calls agenthost's sandboxed tools.
func TestE2E_MCPServeWithTheOfficialTypeScriptClient(t *testing.T) {
	dir := npmMCP(t)
	e := mcpManifest(t)
	out, err := exec.Command("node", filepath.Join(dir, "client.mjs"), filepath.Join(binDir, "agenthost"), e.manifest).Output()
	if err != nil {
		t.Fatalf("node client: %v\n%s", err, out)
	}
	var got struct {
		Tools  []string
		Schema map[string]any
		OK     struct {
			Text    string
			IsError bool
		}
		Bad struct {
			Text    string
			IsError bool
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if strings.Join(got.Tools, ",") != "calc,chatty" || got.Schema["type"] != "object" ||
		got.OK.Text != "42" || got.OK.IsError || got.Bad.Text != "division by zero" || !got.Bad.IsError {
		t.Fatalf("client saw %+v", got)
	}
}

// The reference MCP server from npm (server-everything) as an [[mcp_servers]] entry, with
// no sandbox or confine key: it starts and answers confined by default (no network, read
// access to its node_modules tree and the system's files), as does the scripted adapter.
func TestE2E_MCPServersRunsTheReferenceServerFromNpm(t *testing.T) {
	dir := npmMCP(t)
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "echo", "arguments": "{\"message\":\"hello from agenthost\"}"}]},
	  {"text": "{{result c1}}"}]}`})
	// The allow list is the README's snippet's, so that the README names tools the
	// server it shows does offer.
	f, _ := os.OpenFile(e.manifest, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "\n[[mcp_servers]]\nname = \"everything\"\ncommand = [\"node\", %q]\n%s\n",
		filepath.Join(dir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"), readmeMCPTools(t))
	f.Close()
	r := e.agenthost(t, "run", "--json", "go")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	var result string
	for _, ev := range events(t, r.stdout) {
		if d, ok := ev.Data.(*loop.ToolResultData); ok {
			result = d.Content
		}
	}
	if !strings.Contains(result, "hello from agenthost") {
		t.Fatalf("echo through server-everything: %q", result)
	}
	list := e.agenthost(t, "plugins", "list")
	if !strings.Contains(list.stdout, "everything  mcp server (confined)") || !strings.Contains(list.stdout, "scripted    provider (confined)") ||
		!strings.Contains(list.stdout, "resources   builtin                -      mcp_resources, mcp_read_resource\n") {
		t.Fatalf("plugins list: %s", list.stdout)
	}
}

// readmeMCPTools is the tools line of the README's [[mcp_servers]] snippet (server-everything).
func readmeMCPTools(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, snippet, ok := strings.Cut(string(b), "[[mcp_servers]]\nname = \"everything\"\n")
	if !ok {
		t.Fatal("README.md has no [[mcp_servers]] snippet for server-everything")
	}
	for _, line := range strings.Split(snippet, "\n") {
		if strings.HasPrefix(line, "tools = [") {
			tools, _, _ := strings.Cut(line, "#")
			return strings.TrimSpace(tools)
		}
	}
	t.Fatal("the README's [[mcp_servers]] snippet has no tools line")
	return ""
}
