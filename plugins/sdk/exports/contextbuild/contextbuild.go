//go:build wasip1

// Package contextbuild exports context_build (kind "context") for the
// strategy registered with sdk.OnContextBuild. Import it for its side effect.
package contextbuild

import "github.com/agenthost/agenthost/plugins/sdk"

//go:wasmexport context_build
func contextBuild() int32 { return sdk.Serve(sdk.HandleContextBuild) }
