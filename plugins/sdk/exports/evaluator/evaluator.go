//go:build wasip1

// Package evaluator exports evaluate (kind "evaluator") for the handler registered
// with sdk.OnEvaluate. Import it for its side effect.
package evaluator

import "github.com/agenthost/agenthost/plugins/sdk"

//go:wasmexport evaluate
func evaluate() int32 { return sdk.Serve(sdk.HandleEvaluate) }
