package host

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/mcpclient"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// streamOrder runs prompt and lists its tool_call, tool_result_delta and tool_result
// events in order; seen is told of each delta as it arrives.
func streamOrder(t *testing.T, h *Host, seen func(string)) []string {
	t.Helper()
	var order []string
	in := loop.RunInput{SessionID: "s", Messages: []loop.Message{loop.UserMessage("go")}}
	res, err := h.Runner().RunWith(context.Background(), in, func(e loop.Event) {
		switch d := e.Data.(type) {
		case *loop.ToolCallData:
			order = append(order, "call "+d.ID)
		case *loop.ToolResultDeltaData:
			order = append(order, "delta "+d.ID+" "+d.Text)
			if seen != nil {
				seen(d.Text)
			}
		case *loop.ToolResultData:
			order = append(order, "result "+d.ID+" "+d.Content)
		}
	})
	if err != nil || res.Err != nil {
		t.Fatalf("run: %v %v", err, res.Err)
	}
	return order
}

// A Wasm tool built from source with the SDK (the text example's regex_extract calls
// sdk.StreamResult for each match) streams its result through the stream_result host
// function: each piece is a tool_result_delta of the call, live, and the call's result
// is the whole JSON array the tool returned. With a guardrail the pieces are not shown.
func TestAWasmToolStreamsItsResultThroughTheStreamResultHostFunction(t *testing.T) {
	fixture := `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "regex_extract", "arguments": "{\"text\":\"a1 b22 c333\",\"pattern\":\"[0-9]+\"}"}]},
	  {"expect": {"last_role": "tool"}, "text": "{{result c1}}"}]}`
	plugin := fmt.Sprintf("[[plugins]]\nname = \"text\"\nwasm = %q\n", example(t, "text"))
	h := openHost(t, fixture, plugin, Options{})
	got := streamOrder(t, h, nil)
	sameEvents(t, "events", got, []string{"call c1", "delta c1 1\n", "delta c1 22\n", "delta c1 333\n", `result c1 ["1","22","333"]`})

	h = openHost(t, fixture, plugin+hookPlugin(t, "redact", "guardrail", ""), Options{})
	got = streamOrder(t, h, nil)
	sameEvents(t, "events with a guardrail", got, []string{"call c1", `result c1 ["1","22","333"]`})
}

// An MCP server's progress notification that carries a piece of the result in its _meta
// (mcpclient.MetaResultDelta) is a tool_result_delta of the call as well as a progress
// event; a progress without one is a progress event only. The call's result is what the
// server returned.
func TestAnMCPProgressCarryingResultContentIsAToolResultDelta(t *testing.T) {
	seen := make(chan string, 4)
	srv := mcp.NewServer(&mcp.Implementation{Name: "scan", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "scan"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		tok := req.Params.GetProgressToken()
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half"})
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 2, Total: 2,
			Meta: mcp.Meta{mcpclient.MetaResultDelta: "hit one"}})
		select { // the delta is reported before the result: a late notification is dropped
		case <-seen:
		case <-time.After(20 * time.Second):
			return nil, nil, fmt.Errorf("the delta never reached the run")
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hit one, hit two"}}}, nil, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	h := openHost(t, `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "scan", "arguments": "{}"}]},
	  {"text": "{{result c1}}"}]}`, fmt.Sprintf("[[mcp_servers]]\nname = \"scan\"\nurl = %q\ntimeout = \"30s\"\n", hs.URL), Options{})
	got := streamOrder(t, h, func(text string) { seen <- text })
	sameEvents(t, "events", got, []string{"call c1", "delta c1 hit one", "result c1 hit one, hit two"})
}

func sameEvents(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
		t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
	}
}
