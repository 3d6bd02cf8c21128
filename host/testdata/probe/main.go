//go:build wasip1

// Command probe is the host tests' MCP-ABI tool plugin (built with the Go SDK):
// counter keeps a global between calls (what isolation decides), echo_args
// answers the raw arguments it received, finish ends the run with a
// structured final answer.
package main

import (
	"encoding/json"
	"fmt"

	"github.com/agenthost/agenthost/plugins/sdk"
	_ "github.com/agenthost/agenthost/plugins/sdk/exports/mcptool"
)

func main() {}

var calls int

func init() {
	object := json.RawMessage(`{"type":"object"}`)
	sdk.AddToolSchema("counter", "Count this instance's calls", object, func(json.RawMessage) (sdk.CallToolResult, error) {
		calls++
		return sdk.Text(fmt.Sprint(calls)), nil
	})
	sdk.AddToolSchema("echo_args", "Answer the arguments as received", object, func(args json.RawMessage) (sdk.CallToolResult, error) {
		return sdk.Text(string(args)), nil
	})
	sdk.AddToolSchema("finish", "End the run", object, func(args json.RawMessage) (sdk.CallToolResult, error) {
		return sdk.Final("all done", json.RawMessage(`{"answer":42}`)), nil
	})
}
