//go:build wasip1

// Command notools registers a tool but forgets the exports import: it loads as an
// extism module with no tools, and the host says what is missing.
package main

import "github.com/agenthost/agenthost/plugins/sdk"

func main() {}

func init() {
	sdk.AddTool("lonely", "Never offered.", func(struct{}) (sdk.CallToolResult, error) { return sdk.Text("hi"), nil })
}
