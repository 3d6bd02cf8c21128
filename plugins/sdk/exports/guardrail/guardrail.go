//go:build wasip1

// Package guardrail exports guard (kind "guardrail") for the handler
// registered with sdk.OnGuard. Import it for its side effect.
package guardrail

import "github.com/agenthost/agenthost/plugins/sdk"

//go:wasmexport guard
func guard() int32 { return sdk.Serve(sdk.HandleGuard) }
