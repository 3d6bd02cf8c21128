// Command mcpecho is the end-to-end tests' MCP server (stdio, official Go SDK): echo
// returns its text, env lists the environment it sees, crash exits mid-call, read and
// dial try a file and a TCP address (for confinement), and describe names it and its pid.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type textArgs struct {
	Text string `json:"text"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpecho", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Say it back."}, func(_ context.Context, _ *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
		return text(fmt.Sprintf("echo(%d): %s", os.Getpid(), a.Text)), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "The environment this server sees."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		env := os.Environ()
		sort.Strings(env)
		return text(strings.Join(env, "\n")), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit in the middle of the call."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		os.Exit(3)
		return nil, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "trace", Description: "The traceparent of the call's _meta."}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		tp, _ := req.Params.Meta["traceparent"].(string)
		return text("traceparent=" + tp), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "read", Description: "A file's text, or why it cannot be read."}, func(_ context.Context, _ *mcp.CallToolRequest, a struct {
		Path string `json:"path"`
	}) (*mcp.CallToolResult, any, error) {
		b, err := os.ReadFile(a.Path)
		if err != nil {
			return text("read: " + err.Error()), nil, nil
		}
		return text(string(b)), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "dial", Description: "Open a TCP connection to addr."}, func(_ context.Context, _ *mcp.CallToolRequest, a struct {
		Addr string `json:"addr"`
	}) (*mcp.CallToolResult, any, error) {
		c, err := net.Dial("tcp", a.Addr)
		if err != nil {
			return text("dial: " + err.Error()), nil, nil
		}
		c.Close()
		return text("connected"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "hidden", Description: "Skipped by the manifest."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return text("should not be offered"), nil, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
