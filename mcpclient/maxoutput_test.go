package mcpclient

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sizedServer is an MCP server on loopback HTTP whose tool "make" returns a text of the
// requested number of bytes.
func sizedServer(t *testing.T) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "sized", Version: "1"}, nil)
	type sizeArgs struct {
		Bytes int `json:"bytes"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "make"}, func(_ context.Context, _ *mcp.CallToolRequest, a sizeArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", a.Bytes)}}}, nil, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// TestResultOverMaxOutputIsRefusedAsPluginsAre: a server's result over max_output (1 MiB
// unless the entry says otherwise, as for plugins) is an error result naming both sizes,
// never the session's content; a result at the limit passes whole.
func TestResultOverMaxOutputIsRefusedAsPluginsAre(t *testing.T) {
	url := sizedServer(t)
	ctx := context.Background()
	s, err := Start(ctx, Config{Name: "sized", URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// 8 MiB, not more: under -race on a busy machine the SDK's JSON decoding of a
	// larger result outlasts the call's timeout, which would test the timeout instead.
	res, err := s.Call(ctx, "make", []byte(`{"bytes": 8388608}`))
	var f *Failure
	if !errors.As(err, &f) || !res.IsError || res.Text() != `Error: mcp server "sized": make: output 8 MiB exceeds max_output 1 MiB` || "Error: "+f.Msg != res.Text() {
		t.Fatalf("8 MiB result: %v, %.200s", err, res.Text())
	}
	if res, err := s.Call(ctx, "make", []byte(`{"bytes": 1048576}`)); err != nil || res.IsError || len(res.Text()) != 1<<20 {
		t.Fatalf("1 MiB result: %v, error %v, %d bytes", err, res.IsError, len(res.Text()))
	}

	s2, err := Start(ctx, Config{Name: "sized", URL: url, MaxOutput: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if res, err := s2.Call(ctx, "make", []byte(`{"bytes": 2000000}`)); err != nil || res.IsError {
		t.Fatalf("under a raised max_output: %v, %.200s", err, res.Text())
	}
	if res, _ := s2.Call(ctx, "make", []byte(`{"bytes": 3145728}`)); !res.IsError ||
		res.Text() != `Error: mcp server "sized": make: output 3 MiB exceeds max_output 2 MiB` {
		t.Fatalf("over a raised max_output: %.200s", res.Text())
	}
}
