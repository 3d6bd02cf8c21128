//go:build wasip1

// Command conformance is the MCP conformance suite's server fixture as an mcp v2 tool
// plugin (ABI.md): the tools, prompts, resources and completions the suite's server
// scenarios call, served by `agenthost mcp serve` (surface/mcpserver's conformance
// test runs the suite against it).
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o conformance.wasm .
package main

import (
	"github.com/agenthost/agenthost/plugins/sdk"
)

func main() {}

//go:wasmexport list_tools
func listTools() int32 { return sdk.Serve(sdk.HandleListTools) }

//go:wasmexport call_tool
func callTool() int32 { return sdk.Serve(sdk.HandleCallTool) }

//go:wasmexport list_prompts
func listPrompts() int32 { return sdk.Serve(handleListPrompts) }

//go:wasmexport get_prompt
func getPrompt() int32 { return sdk.Serve(handleGetPrompt) }

//go:wasmexport list_resources
func listResources() int32 { return sdk.Serve(handleListResources) }

//go:wasmexport list_resource_templates
func listResourceTemplates() int32 { return sdk.Serve(handleListResourceTemplates) }

//go:wasmexport read_resource
func readResource() int32 { return sdk.Serve(handleReadResource) }

//go:wasmexport complete
func complete() int32 { return sdk.Serve(handleComplete) }
