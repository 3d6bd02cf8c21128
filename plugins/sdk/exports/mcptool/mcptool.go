//go:build wasip1

// Package mcptool exports the mcp tool ABI (hyper-mcp v1 and v2) for the
// tools registered with sdk.AddTool. Import it for its side effect.
package mcptool

import "github.com/agenthost/agenthost/plugins/sdk"

//go:wasmexport describe
func describe() int32 { return sdk.Serve(sdk.HandleDescribe) }

//go:wasmexport call
func call() int32 { return sdk.Serve(sdk.HandleCall) }

//go:wasmexport list_tools
func listTools() int32 { return sdk.Serve(sdk.HandleListTools) }

//go:wasmexport call_tool
func callTool() int32 { return sdk.Serve(sdk.HandleCallTool) }
