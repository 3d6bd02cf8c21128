package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/loop"
)

func buildMCPEcho(t *testing.T) string {
	t.Helper()
	return testbin.Path(t, testbin.Bin{Pkg: "cmd/agenthost/testdata/mcpecho"})
}

// [[mcp_servers]]: a real MCP server's tools join the agent's; the server sees only the
// environment its entry names; one that crashes mid-call gives that call an error result
// and is started again for the next; skip_tools hides a tool; plugins list says it is not
// sandboxed; plugins call reaches it.
func TestE2E_MCPServerToolsJoinTheAgent(t *testing.T) {
	echo := buildMCPEcho(t)
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "echo", "arguments": "{\"text\":\"one\"}"},
	                  {"id": "c2", "name": "env", "arguments": "{}"}]},
	  {"tool_calls": [{"id": "c3", "name": "crash", "arguments": "{}"}]},
	  {"tool_calls": [{"id": "c4", "name": "echo", "arguments": "{\"text\":\"two\"}"}, {"id": "c5", "name": "calc", "arguments": "{\"expression\":\"2+2\"}"}]},
	  {"text": "done"}]}`})
	f, _ := os.OpenFile(e.manifest, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "\n[[mcp_servers]]\nname = \"echoes\"\ncommand = [%q]\nenv = [\"AGENTHOST_TEST_VISIBLE\"]\nskip_tools = [\"hidden\"]\ntimeout = \"20s\"\n", echo)
	f.Close()
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", e.manifest, "run", "--json", "go")
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "AGENTHOST_TEST_VISIBLE=yes", "AGENTHOST_TEST_SECRET=leak")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	results := map[string]loop.ToolResultData{}
	for _, ev := range events(t, string(out)) {
		if d, ok := ev.Data.(*loop.ToolResultData); ok {
			results[d.ID] = *d
		}
	}
	if !strings.HasPrefix(results["c1"].Content, "echo(") || !strings.HasSuffix(results["c1"].Content, "): one") {
		t.Fatalf("echo: %+v", results["c1"])
	}
	if env := results["c2"].Content; env != "AGENTHOST_TEST_VISIBLE=yes" {
		t.Fatalf("the server saw more than its env list:\n%s", env)
	}
	if r := results["c3"]; !r.IsError || !strings.Contains(r.Content, `mcp server "echoes" stopped during the call`) {
		t.Fatalf("crash: %+v", r)
	}
	pid1 := strings.TrimSuffix(strings.TrimPrefix(results["c1"].Content, "echo("), "): one")
	if r := results["c4"]; r.IsError || !strings.HasSuffix(r.Content, "): two") || strings.Contains(r.Content, "echo("+pid1+")") {
		t.Fatalf("after the crash the server was not started again: %+v (first pid %s)", r, pid1)
	}
	if results["c5"].Content != "4" {
		t.Fatalf("calc beside the MCP tools: %+v", results["c5"])
	}

	list := e.agenthost(t, "plugins", "list")
	if !strings.Contains(list.stdout, "echoes") || !strings.Contains(list.stdout, "mcp server (confined)") ||
		!strings.Contains(list.stdout, "crash, dial, echo, env") || strings.Contains(list.stdout, "hidden") {
		t.Fatalf("plugins list:\n%s", list.stdout)
	}
	if r := e.agenthost(t, "plugins", "call", "echoes", "echo", `{"text":"direct"}`); r.code != 0 || !strings.Contains(r.stdout, "): direct") {
		t.Fatalf("plugins call: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := e.agenthost(t, "plugins", "inspect", "echoes"); r.code != 0 || !strings.Contains(r.stdout, `"sandboxed": false`) {
		t.Fatalf("inspect: %s", r.stdout)
	}
}

func TestE2E_MCPServerThatCannotStartNamesItsManifestLine(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "x"}]}`})
	f, _ := os.OpenFile(e.manifest, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "\n[[mcp_servers]]\nname = \"ghost\"\ncommand = [\"/nonexistent/mcp-server\"]\n")
	f.Close()
	r := e.agenthost(t, "run", "hi")
	if r.code != 2 || !strings.Contains(r.stderr, "mcp_servers[0]") || !strings.Contains(r.stderr, `mcp server "ghost": start`) {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	b, _ := os.ReadFile(e.manifest)
	line := strings.Count(string(b[:strings.Index(string(b), "[[mcp_servers]]")]), "\n") + 1
	if !strings.Contains(r.stderr, fmt.Sprintf("agent.toml:%d:", line)) {
		t.Fatalf("error does not name line %d: %s", line, r.stderr)
	}
}

func TestE2E_MCPServerRequireApproval(t *testing.T) {
	echo := buildMCPEcho(t)
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "echo", "arguments": "{\"text\":\"one\"}"}, {"id": "c2", "name": "env", "arguments": "{}"}]},
	  {"text": "done"}]}`})
	f, _ := os.OpenFile(e.manifest, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "\n[[mcp_servers]]\nname = \"echoes\"\ncommand = [%q]\nrequire_approval = [\"echo\"]\n", echo)
	f.Close()
	r := e.agenthost(t, "run", "--json", "--approve", "none", "go")
	results := map[string]loop.ToolResultData{}
	for _, ev := range events(t, r.stdout) {
		if d, ok := ev.Data.(*loop.ToolResultData); ok {
			results[d.ID] = *d
		}
	}
	if !results["c1"].IsError || !strings.Contains(results["c1"].Content, "rejected") || results["c2"].IsError {
		t.Fatalf("echo needs approval, env does not: %+v", results)
	}
}
