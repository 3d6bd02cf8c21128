//go:build wasip1

// Package termination exports on_step and before_final (kind "termination")
// for the handlers registered with sdk.OnStep and sdk.OnBeforeFinal. Import
// it for its side effect.
package termination

import "github.com/agenthost/agenthost/plugins/sdk"

//go:wasmexport on_step
func onStep() int32 { return sdk.Serve(sdk.HandleOnStep) }

//go:wasmexport before_final
func beforeFinal() int32 { return sdk.Serve(sdk.HandleBeforeFinal) }
