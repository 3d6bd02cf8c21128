package mcpclient

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call that does not get the server's answer (timed out, the server gone) returns a
// *Failure beside the error result saying the same, so the loop can fall back; the
// server's own error answer (isError) and arguments that are no JSON object are answers,
// with no error.
func TestACallWithoutTheServersAnswerIsAFailureAndItsErrorAnswerIsNot(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "f", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "refuse"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such city"}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "slow"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		<-ctx.Done()
		return &mcp.CallToolResult{}, nil, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	ctx := context.Background()
	// The timeout bounds every call (and the start): 2 s, as the refused calls, which must
	// not time out, took more than 200 ms now and then under -race on a loaded machine.
	s, err := Start(ctx, Config{Name: "f", URL: hs.URL, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	if res, err := s.Call(ctx, "refuse", []byte(`{}`)); err != nil || !res.IsError || res.Text() != "no such city" {
		t.Fatalf("the server's error answer: %+v %v", res, err)
	}
	if res, err := s.Call(ctx, "refuse", []byte(`[1]`)); err != nil || !res.IsError {
		t.Fatalf("arguments no JSON object: %+v %v", res, err)
	}
	var f *Failure
	res, err := s.Call(ctx, "slow", []byte(`{}`))
	if !errors.As(err, &f) || !res.IsError || res.Text() != "Error: "+f.Msg || !strings.Contains(f.Msg, `mcp server "f": slow timed out after 2s`) {
		t.Fatalf("a timed-out call: %+v %v", res, err)
	}
	hs.CloseClientConnections()
	hs.Close()
	res, err = s.Call(ctx, "refuse", []byte(`{}`))
	if !errors.As(err, &f) || !res.IsError || !strings.HasPrefix(res.Text(), `Error: mcp server "f"`) {
		t.Fatalf("a call to a server that is gone: %+v %v", res, err)
	}
}
