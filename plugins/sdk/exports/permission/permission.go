//go:build wasip1

// Package permission exports permit (kind "permission") for the handler
// registered with sdk.OnPermit. Import it for its side effect.
package permission

import "github.com/agenthost/agenthost/plugins/sdk"

//go:wasmexport permit
func permit() int32 { return sdk.Serve(sdk.HandlePermit) }
