package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolResults are the tool_result events of one run through the host's door.
func toolResults(t *testing.T, h *Host, session, prompt string) ([]loop.ToolResultData, []loop.ToolCallData, loop.RunResult) {
	t.Helper()
	var results []loop.ToolResultData
	var calls []loop.ToolCallData
	res, err := h.Runner().RunWith(context.Background(), loop.RunInput{SessionID: session, Messages: []loop.Message{loop.UserMessage(prompt)}}, func(e loop.Event) {
		switch d := e.Data.(type) {
		case *loop.ToolResultData:
			results = append(results, *d)
		case *loop.ToolCallData:
			calls = append(calls, *d)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return results, calls, res
}

// [tools.NAME] gives any tool a fallback list, whoever offers it: a Go tool that fails
// falls back to an MCP server's tool, and an MCP tool whose server is gone falls back
// to a Go tool, each through an argument mapping (the two take differently named
// arguments). The fallback's call is a call of its own; the model gets its result
// under the failed call's id.
func TestMCPAndGoToolsFallBackToEachOtherThroughAnArgumentMapping(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "web", Version: "1"}, nil)
	type searchArgs struct {
		Query string `json:"query"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "search"}, func(_ context.Context, _ *mcp.CallToolRequest, a searchArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "web: " + a.Query}}}, nil, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)

	qSchema := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)
	flaky := loop.FuncTool{ToolSpec: loop.ToolSpec{Name: "flaky", InputSchema: qSchema}, Fn: func(context.Context, loop.ToolCall) (loop.ToolResult, error) {
		return loop.ToolResult{}, errors.New("index offline")
	}}
	local := loop.FuncTool{ToolSpec: loop.ToolSpec{Name: "local", InputSchema: qSchema}, Fn: func(_ context.Context, c loop.ToolCall) (loop.ToolResult, error) {
		return loop.TextResult("local got " + c.Arguments), nil
	}}
	h := openHost(t, `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "flaky", "arguments": "{\"q\":\"x\"}"}]},
	  {"text": "{{result c1}}"},
	  {"tool_calls": [{"id": "c2", "name": "search", "arguments": "{\"query\":\"y\"}"}]},
	  {"text": "{{result c2}}"}]}`, fmt.Sprintf(`[[mcp_servers]]
name = "web"
url = %q
timeout = "5s"
[tools.flaky]
fallback = [{ tool = "search", arguments = { query = "q" } }]
[tools.search]
fallback = [{ tool = "local", arguments = { q = "query" } }]
`, hs.URL), Options{Tools: []loop.Tool{flaky, local}})

	results, calls, res := toolResults(t, h, "s1", "find x")
	if len(calls) != 2 || calls[1].ID != "c1~search" || calls[1].FallbackFor != "c1" || string(calls[1].Arguments) != `{"query":"x"}` {
		t.Fatalf("Go tool → MCP tool: calls %+v", calls)
	}
	if len(results) != 2 || results[0].Content != "web: x" || results[1].ID != "c1" || results[1].Fallback != "search" || res.Final.Text() != "web: x" {
		t.Fatalf("Go tool → MCP tool: results %+v, final %q", results, res.Final.Text())
	}

	hs.CloseClientConnections()
	hs.Close()
	results, calls, res = toolResults(t, h, "s1", "find y")
	if len(calls) != 2 || calls[1].ID != "c2~local" || string(calls[1].Arguments) != `{"q":"y"}` {
		t.Fatalf("MCP tool → Go tool: calls %+v", calls)
	}
	if len(results) != 2 || results[1].ID != "c2" || results[1].Fallback != "local" || res.Final.Text() != `local got {"q":"y"}` {
		t.Fatalf("MCP tool → Go tool: results %+v, final %q", results, res.Final.Text())
	}
}

// The [tools.NAME] table is checked when the agent is built, at its key with the file
// and line: a name no loaded tool has, a tool with a fallback list in two places, a
// mapping naming an argument the fallback's schema does not have or one the failed
// tool does not take, a required argument the mapping leaves out, and (without a
// mapping) another schema.
func TestAFallbackArgumentMappingNamingArgumentsTheToolsLackIsRefusedAtLoad(t *testing.T) {
	schema := func(props ...string) json.RawMessage {
		var ps []string
		for _, p := range props {
			ps = append(ps, fmt.Sprintf("%q:{\"type\":\"string\"}", p))
		}
		return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{%s},"required":[%q]}`, strings.Join(ps, ","), props[0]))
	}
	tool := func(name string, s json.RawMessage) loop.Tool {
		return loop.FuncTool{ToolSpec: loop.ToolSpec{Name: name, InputSchema: s}}
	}
	gos := []loop.Tool{tool("a", schema("query", "limit")), tool("b", schema("q", "n"))}
	for table, want := range map[string]string{
		"[tools.nope]\nfallback = [\"b\"]":                                        `tools.nope: no loaded tool "nope"`,
		"[tools.a]\nfallback = [{ tool = \"b\", arguments = { x = \"query\" } }]": `tools.a.fallback: arguments: "b" has no argument "x" (its arguments: [n q])`,
		"[tools.a]\nfallback = [{ tool = \"b\", arguments = { q = \"nope\" } }]":  `tools.a.fallback: arguments: "q" = "nope": "a" has no argument "nope"`,
		"[tools.a]\nfallback = [{ tool = \"b\", arguments = { n = \"limit\" } }]": `tools.a.fallback: arguments: "b" requires "q", which the mapping does not give`,
		"[tools.a]\nfallback = [\"b\"]":                                           `tools.a.fallback: "b" takes other arguments than "a"`,
		"[tools.a]\nfallback = [{ tool = \"b\", argument = { q = \"query\" } }]":  `a fallback table has tool and arguments, not "argument"`,
		"[tools.a]\nfallback = [{ tool = \"b\", arguments = { q = 1 } }]":         `want the name of one of the failed call's arguments`,
		"[tools.a]\nfallback = [\"a\"]":                                           `tools.a.fallback: tool "a" cannot fall back to itself`,
	} {
		_, err := openHostErr(t, "", `{"turns": []}`, table+"\n", Options{Tools: gos})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "agent.toml:") {
			t.Errorf("%s:\n got %v\nwant %q", table, err, want)
		}
	}
	if _, err := openHostErr(t, "", `{"turns": []}`, "[tools.a]\nfallback = [{ tool = \"b\", arguments = { q = \"query\", n = \"limit\" } }]\n", Options{Tools: gos}); err != nil {
		t.Fatalf("a mapping the schemas allow: %v", err)
	}
}
