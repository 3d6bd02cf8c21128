//go:build wasip1

// Package grader exports grade (kind "evaluator", used by `agenthost eval`) for the
// handler registered with sdk.OnGrade. Import it for its side effect.
package grader

import "github.com/agenthost/agenthost/plugins/sdk"

//go:wasmexport grade
func grade() int32 { return sdk.Serve(sdk.HandleGrade) }
