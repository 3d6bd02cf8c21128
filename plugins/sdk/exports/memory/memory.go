//go:build wasip1

// Package memory exports extract and rank (kind "memory") for the handlers registered
// with sdk.OnExtract and sdk.OnRank. Import it for its side effect; a plugin that
// registers only one of them answers the other with an error, and the host calls only
// the exports a plugin has.
package memory

import "github.com/agenthost/agenthost/plugins/sdk"

//go:wasmexport extract
func extract() int32 { return sdk.Serve(sdk.HandleExtract) }

//go:wasmexport rank
func rank() int32 { return sdk.Serve(sdk.HandleRank) }
