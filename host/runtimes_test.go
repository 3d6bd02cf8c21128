package host

import (
	"context"
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
