// Package exports only documents its subpackages; it holds no code.
//
// Each subpackage defines the Wasm exports of one plugin kind and is imported
// for its side effect by a plugin's main package (they build only for
// wasip1):
//
//	mcptool      describe, call (mcp v1) and list_tools, call_tool (mcp v2)
//	contextbuild context_build
//	termination  on_step, before_final
//	guardrail    guard
//	permission   permit
//
// They must not contain logic: each export hands its input to the matching
// sdk.Handle* function through sdk.Serve.
package exports
