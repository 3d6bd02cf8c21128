package mcpclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An MCP server over Streamable HTTP, as [[mcp_servers]] url = ... reaches one: headers
// are sent, the allow list holds, bad arguments and slow tools are error results.
func TestURLServerWithHeadersToolsAndTimeouts(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	type textArgs struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + a.Text}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "slow"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		select {
		case <-ctx.Done():
		case <-time.After(30 * time.Second):
		}
		return &mcp.CallToolResult{}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "other"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	var mu sync.Mutex
	var auth []string
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	defer hs.Close()

	ctx := context.Background()
	s, err := Start(ctx, Config{Name: "remote", URL: hs.URL, Headers: map[string]string{"Authorization": "Bearer s3cret"},
		Tools: []string{"echo", "slow"}, Timeout: 3 * time.Second}) // it bounds the start too: 300 ms failed on a loaded machine
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var names []string
	for _, tl := range s.Tools() {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "echo,slow" || !s.Remote() {
		t.Fatalf("tools %v", names)
	}
	res, err := s.Call(ctx, "echo", []byte(`{"text":"hi"}`))
	if err != nil || res.IsError || res.Text() != "echo: hi" {
		t.Fatalf("echo: %+v %v", res, err)
	}
	mu.Lock()
	for _, a := range auth {
		if a != "Bearer s3cret" {
			t.Errorf("a request without the header: %q", a)
		}
	}
	mu.Unlock()
	if res, _ := s.Call(ctx, "echo", []byte(`[1]`)); !res.IsError || !strings.Contains(res.Text(), "not a JSON object") {
		t.Fatalf("array arguments: %+v", res)
	}
	if res, _ := s.Call(ctx, "slow", nil); !res.IsError || !strings.Contains(res.Text(), "timed out after 3s") {
		t.Fatalf("slow: %+v", res)
	}
	// The error lists what the server does offer (a README snippet that named a tool an
	// upgraded server renamed failed with no hint of the new name).
	if _, err := Start(ctx, Config{Name: "remote", URL: hs.URL, Tools: []string{"missing"}}); err == nil ||
		err.Error() != `mcp server "remote" has no tool "missing" (tools lists it); it offers: echo, other, slow` {
		t.Fatalf("allow list naming a missing tool: %v", err)
	}
}
