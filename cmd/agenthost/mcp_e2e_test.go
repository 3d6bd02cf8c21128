//lint:file-ignore SA1019 MCP sampling, roots and logging are deprecated as of the 2026-07-28 protocol but still served in its deprecation window; agenthost supports them for the servers and clients that use them

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpManifest loads calc and chatty, and no provider: mcp serve needs none.
func mcpManifest(t *testing.T) *agentEnv {
	dir := t.TempDir()
	p := filepath.Join(dir, "agent.toml")
	os.WriteFile(p, []byte(fmt.Sprintf("[store]\nkind = \"memory\"\n[[plugins]]\nname = \"calc\"\nwasm = %q\n[[plugins]]\nname = \"chatty\"\nwasm = %q\n",
		calcWasm, authorPlugins(t)["chatty"])), 0o644)
	return &agentEnv{dir: dir, manifest: p}
}

// exerciseMCP lists and calls tools as any MCP client would, through the official SDK.
func exerciseMCP(t *testing.T, transport mcp.Transport) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readyBound)
	defer cancel()
	var mu sync.Mutex
	var logs, progress []string
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			mu.Lock()
			logs = append(logs, fmt.Sprintf("%s/%s/%v", r.Params.Logger, r.Params.Level, r.Params.Data))
			mu.Unlock()
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, fmt.Sprintf("%v %v/%v %s", r.Params.ProgressToken, r.Params.Progress, r.Params.Total, r.Params.Message))
			mu.Unlock()
		}})
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "calc,chatty" {
		t.Fatalf("tools %v", names)
	}
	schema, _ := json.Marshal(tools.Tools[0].InputSchema)
	if !strings.Contains(string(schema), `"expression"`) {
		t.Fatalf("calc schema %s", schema)
	}
	text := func(r *mcp.CallToolResult) string {
		var b strings.Builder
		for _, c := range r.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "calc", Arguments: map[string]any{"expression": "6*7"}})
	if err != nil || res.IsError || text(res) != "42" {
		t.Fatalf("calc: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "calc", Arguments: map[string]any{"expression": "1/0"}})
	if err != nil || !res.IsError || text(res) != "division by zero" {
		t.Fatalf("calc 1/0: %v %q", err, text(res))
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "calc", Arguments: map[string]any{"expression": 7}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "/expression: got number, want string") {
		t.Fatalf("schema refusal: %v %q", err, text(res))
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	// Clients of the 2026-07-28 protocol ask for logs per request; older ones per session.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "chatty", Arguments: map[string]any{"steps": 2},
		Meta: mcp.Meta{mcp.MetaKeyLogLevel: "debug", "progressToken": "p1"}})
	if err != nil || text(res) != "said everything" {
		t.Fatalf("chatty: %v %+v", err, res)
	}
	deadline := time.Now().Add(readyBound) // notifications may trail the result
	for {
		mu.Lock()
		got := strings.Join(logs, "\n")
		mu.Unlock()
		mu.Lock()
		prog := strings.Join(progress, "|")
		mu.Unlock()
		if strings.Contains(got, "chatty/warning/a warning line") && strings.Contains(got, "chatty/debug/[stdout] printed to stdout") &&
			prog == "p1 1/2 step 1|p1 2/2 step 2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("plugin logs and progress not forwarded to the client:\n%s\nprogress: %s", got, prog)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestE2E_MCPServeOverStdioWithTheOfficialClient(t *testing.T) {
	e := mcpManifest(t)
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", e.manifest, "mcp", "serve")
	cmd.Dir = e.dir
	exerciseMCP(t, &mcp.CommandTransport{Command: cmd})
}

func TestE2E_MCPServeOverStreamableHTTPBehindTheGuard(t *testing.T) {
	e := mcpManifest(t)
	s := e.serveArgs(t, "mcp", "serve", "--http", "127.0.0.1:0")
	exerciseMCP(t, &mcp.StreamableClientTransport{Endpoint: s.base + "/mcp"})
	// A web page on another site cannot reach the tools (CSRF), nor a rebinding name.
	for _, hdr := range []map[string]string{{"Origin": "https://evil.example"}, {"Host": "evil.example"}} {
		req, _ := http.NewRequest("POST", s.base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("%v: status %d, want 403", hdr, resp.StatusCode)
		}
	}
}

// --agent offers the whole agent as ask_<agent>: a question runs the loop, with its tools.
func TestE2E_MCPServeOffersTheAgentAsATool(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]},
	  {"text": "The answer is {{result c1}}."}]}`})
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", e.manifest, "mcp", "serve", "--agent")
	cmd.Dir = e.dir
	ctx, cancel := context.WithTimeout(context.Background(), readyBound)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_e2e", Arguments: map[string]any{"question": "what is 6*7?"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "The answer is 42." {
		t.Fatalf("ask_e2e: %v %+v", err, res)
	}
	res, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_e2e", Arguments: map[string]any{}})
	if res == nil || !res.IsError {
		t.Fatalf("a call without a question must be refused: %+v", res)
	}
}

// Third-party plugins (the hyper-mcp corpus) over MCP: a v2 plugin's prompts and resource
// templates are offered and served from the sandbox, and a plugin that changes its tool
// list makes the server tell the client so.
func TestE2E_MCPServeCorpusPromptsResourcesAndListChanged(t *testing.T) {
	corpus := filepath.Join(repoRoot, "..", "shared", "corpus", "hyper-mcp")
	dir := t.TempDir()
	manifest := filepath.Join(dir, "agent.toml")
	os.WriteFile(manifest, []byte(fmt.Sprintf("[store]\nkind = \"memory\"\n[[plugins]]\nname = \"rstime\"\nwasm = %q\n[[plugins]]\nname = \"dyn\"\nwasm = %q\n",
		filepath.Join(corpus, "rstime_v2.wasm"), filepath.Join(corpus, "tool_list_changed.wasm"))), 0o644)
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", manifest, "mcp", "serve")
	cmd.Dir = dir
	ctx, cancel := context.WithTimeout(context.Background(), readyBound)
	defer cancel()
	changed := make(chan struct{}, 4)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(prompts.Prompts) != 1 || prompts.Prompts[0].Name != "get_time_with_timezone" {
		t.Fatalf("prompts %+v %v", prompts, err)
	}
	got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "get_time_with_timezone", Arguments: map[string]string{"timezone": "Asia/Tokyo"}})
	if err != nil || len(got.Messages) != 1 || got.Messages[0].Content.(*mcp.TextContent).Text != "Please get the time for the timezone Asia/Tokyo" {
		t.Fatalf("get_prompt %+v %v", got, err)
	}
	templates, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(templates.ResourceTemplates) != 1 || templates.ResourceTemplates[0].Name != "time_zone_converter" {
		t.Fatalf("resource templates %+v %v", templates, err)
	}
	// Reading it would fetch a page; the plugin has no allowed_hosts, so the sandbox says no.
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "https://www.timezoneconverter.com/cgi-bin/zoneinfo?tz=UTC"})
	if err == nil || !strings.Contains(err.Error(), "not in allowed_hosts") {
		t.Fatalf("read_resource: %v", err)
	}

	names := func() string {
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, tl := range tools.Tools {
			n = append(n, tl.Name)
		}
		return strings.Join(n, ",")
	}
	before := names()
	if !strings.Contains(before, "add_tool") || strings.Contains(before, "tool_1") {
		t.Fatalf("tools before: %s", before)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_tool", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	} else if res.IsError {
		t.Fatalf("add_tool: %+v", res.Content[0])
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no notifications/tools/list_changed after the plugin changed its list")
	}
	if after := names(); !strings.Contains(after, "tool_1") {
		t.Fatalf("tools after: %s", after)
	}
	// The new tool is called through the same pipeline as the others.
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_1", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("tool_1: %v %+v", err, res)
	}
}
