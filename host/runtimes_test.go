package host

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An MCP server with prepare = true is made ready before each run that offers its tools
// (a runtime event says it is); when it does not answer, the run still runs, its tools
// are unavailable (the call fails with the reason and never reaches the server) and the
// other tools go on, seeing the run's hints.
func TestAnMCPServerWithPrepareIsReadiedBeforeTheRunOrItsToolsAreUnavailable(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "web", Version: "1"}, nil)
	calls := 0
	mcp.AddTool(srv, &mcp.Tool{Name: "search"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		calls++
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found"}}}, nil, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	where := loop.FuncTool{ToolSpec: loop.ToolSpec{Name: "where"}, Fn: func(ctx context.Context, _ loop.ToolCall) (loop.ToolResult, error) {
		return loop.TextResult("region " + loop.RuntimeHints(ctx)["region"]), nil
	}}
	h := openHost(t, `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "search", "arguments": "{}"}]},
	  {"text": "{{result c1}}"},
	  {"tool_calls": [{"id": "c2", "name": "search", "arguments": "{}"}, {"id": "c3", "name": "where", "arguments": "{}"}]},
	  {"text": "{{result c2}} / {{result c3}}"}]}`, fmt.Sprintf("[[mcp_servers]]\nname = \"web\"\nurl = %q\ntimeout = \"5s\"\nprepare = true\n", hs.URL),
		Options{Tools: []loop.Tool{where}})

	run := func(hints map[string]string) ([]loop.RuntimeData, loop.RunResult) {
		var rts []loop.RuntimeData
		res, err := h.Runner().RunWith(context.Background(), loop.RunInput{SessionID: "s", RuntimeHints: hints,
			Messages: []loop.Message{loop.UserMessage("go")}}, func(e loop.Event) {
			if d, ok := e.Data.(*loop.RuntimeData); ok {
				rts = append(rts, *d)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return rts, res
	}
	rts, res := run(nil)
	if len(rts) != 1 || rts[0].Name != "web" || !rts[0].Ready || res.Final.Text() != "found" || calls != 1 {
		t.Fatalf("a live server: runtime %+v, final %q, %d calls", rts, res.Final.Text(), calls)
	}

	hs.CloseClientConnections()
	hs.Close()
	rts, res = run(map[string]string{"region": "eu"})
	want := "Error: tool 'search' is unavailable in this run: its runtime 'web' could not be prepared: "
	if len(rts) != 1 || rts[0].Ready || !strings.Contains(rts[0].Error, `mcp server "web"`) ||
		!strings.HasPrefix(res.Final.Text(), want) || !strings.HasSuffix(res.Final.Text(), " / region eu") || calls != 1 {
		t.Fatalf("a server gone: runtime %+v, final %q, %d calls", rts, res.Final.Text(), calls)
	}
}

// A tool plugin with prepare = true has its prepare export called before each run that
// offers its tools, on the instance the run's session then calls (isolation "session"),
// with the run's init data for it and its hints; a prepare that fails leaves the
// plugin's tools unavailable for that run, with the plugin's reason. prepare on a plugin
// without the export, on a plugin whose calls get fresh instances, or on a plugin that
// is not a tool plugin is refused at the key.
func TestAPluginWithPrepareIsCalledBeforeTheRunOnTheSessionsInstance(t *testing.T) {
	h := openHost(t, `{"per_session": true, "turns": [
	  {"tool_calls": [{"id": "c1", "name": "prepared", "arguments": "{}"}]},
	  {"text": "{{result c1}}"}]}`, probePlugin(t, "prepare = true", ""), Options{})
	run := func(session string, init string) (loop.RunResult, []loop.RuntimeData) {
		var rts []loop.RuntimeData
		res, err := h.Runner().RunWith(context.Background(), loop.RunInput{SessionID: session, Messages: []loop.Message{loop.UserMessage("go")},
			RuntimeInit: map[string]json.RawMessage{"probe": json.RawMessage(init)}, RuntimeHints: map[string]string{"region": "eu"}}, func(e loop.Event) {
			if d, ok := e.Data.(*loop.RuntimeData); ok {
				rts = append(rts, *d)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return res, rts
	}
	res, rts := run("s1", `{"token":"t1"}`)
	if len(rts) != 1 || rts[0].Name != "probe" || !rts[0].Ready || res.Final.Text() != `{"init":{"token":"t1"},"hints":{"region":"eu"}}` {
		t.Fatalf("prepared: runtime %+v, final %q", rts, res.Final.Text())
	}
	res, rts = run("s2", `{"fail":true}`)
	if len(rts) != 1 || rts[0].Ready || !strings.Contains(rts[0].Error, "cannot prepare") ||
		!strings.HasPrefix(res.Final.Text(), "Error: tool 'prepared' is unavailable in this run: its runtime 'probe' could not be prepared: ") {
		t.Fatalf("a failed prepare: runtime %+v, final %q", rts, res.Final.Text())
	}

	for plugin, want := range map[string]string{
		"[[plugins]]\nname = \"calc\"\nwasm = \"" + calcWasm + "\"\nprepare = true\n": `plugins[0].prepare: plugin "calc" exports no prepare function`,
		probePlugin(t, "prepare = true", `isolation = "call"`):                        `plugins[0].prepare: plugin "probe" has isolation = "call"`,
		probePlugin(t, "prepare = true\nkind = \"guardrail\"", ""):                    `plugins[0].prepare: plugin "probe" is of kind "guardrail"`,
	} {
		if _, err := openHostErr(t, "", `{"turns": []}`, plugin, Options{}); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "agent.toml:") {
			t.Errorf("%s:\n got %v\nwant %q", plugin, err, want)
		}
	}
}
