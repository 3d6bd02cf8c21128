//go:build wasip1

// Package planner exports plan (kind "planner") for the handler registered with
// sdk.OnPlan. Import it for its side effect.
package planner

import "github.com/agenthost/agenthost/plugins/sdk"

//go:wasmexport plan
func plan() int32 { return sdk.Serve(sdk.HandlePlan) }
