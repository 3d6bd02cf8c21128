package host

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPServerMaxOutputFromTheManifestBoundsItsResults: the entry's max_output reaches
// the MCP client: a server on loopback HTTP whose result is over it gives an error
// result naming both sizes, and one under it passes.
func TestMCPServerMaxOutputFromTheManifestBoundsItsResults(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "sized", Version: "1"}, nil)
	type sizeArgs struct {
		Bytes int `json:"bytes"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "make"}, func(_ context.Context, _ *mcp.CallToolRequest, a sizeArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", a.Bytes)}}}, nil, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close) // after the host's Close (cleanups run last first), which ends its stream

	h := openHost(t, `{"turns": []}`, fmt.Sprintf("[[mcp_servers]]\nname = \"sized\"\nurl = %q\nmax_output = \"1KiB\"\n", hs.URL), Options{})
	res, _, err := h.Door().CallPluginTool(context.Background(), h.Local(context.Background(), ""), "sized", "make", []byte(`{"bytes": 2048}`), CallOptions{})
	if err != nil || !res.IsError || res.Text() != `Error: mcp server "sized": make: output 2 KiB exceeds max_output 1 KiB` {
		t.Fatalf("over max_output: %v, %.200s", err, res.Text())
	}
	if res, _, err := h.Door().CallPluginTool(context.Background(), h.Local(context.Background(), ""), "sized", "make", []byte(`{"bytes": 1024}`), CallOptions{}); err != nil || res.IsError || len(res.Text()) != 1024 {
		t.Fatalf("at max_output: %v, %.200s", err, res.Text())
	}
}
