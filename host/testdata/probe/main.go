//go:build wasip1

// Command probe is the host tests' MCP-ABI tool plugin (built with the Go SDK):
// prepared answers what its prepare export was given (a runtime, runtimes_test.go),
// counter keeps a global between calls (what isolation decides), echo_args
// answers the raw arguments it received, finish ends the run with a
// structured final answer, runs counts its executions in its KV, whoami answers the call id and session it was given
// (sdk.CallID, sdk.SessionID); permit is a permission hook.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/agenthost/agenthost/plugins/sdk"
	_ "github.com/agenthost/agenthost/plugins/sdk/exports/mcptool"
	_ "github.com/agenthost/agenthost/plugins/sdk/exports/permission"
)

func main() {}

var calls int

// prepared is what the last prepare export was given (a runtime prepared before a run,
// when the manifest says prepare = true): the prepared tool answers it.
var prepared = "nothing"

//go:wasmexport prepare
func prepare() int32 {
	return sdk.Serve(func(in []byte) ([]byte, error) {
		if bytes.Contains(in, []byte(`"fail":true`)) {
			return nil, fmt.Errorf("cannot prepare with %s", in)
		}
		prepared = string(in)
		return nil, nil
	})
}

func init() {
	object := json.RawMessage(`{"type":"object"}`)
	sdk.AddToolSchema("counter", "Count this instance's calls", object, func(json.RawMessage) (sdk.CallToolResult, error) {
		calls++
		return sdk.Text(fmt.Sprint(calls)), nil
	})
	sdk.AddToolSchema("prepared", "Answer what this instance's prepare was given", object, func(json.RawMessage) (sdk.CallToolResult, error) {
		return sdk.Text(prepared), nil
	})
	sdk.AddToolSchema("echo_args", "Answer the arguments as received", object, func(args json.RawMessage) (sdk.CallToolResult, error) {
		return sdk.Text(string(args)), nil
	})
	sdk.AddToolSchema("measure", "Answer structured content only", object, func(json.RawMessage) (sdk.CallToolResult, error) {
		return sdk.CallToolResult{StructuredContent: json.RawMessage(`{"cm":180}`)}, nil
	})
	sdk.AddToolSchema("whoami", "Answer this call's id and session", object, func(json.RawMessage) (sdk.CallToolResult, error) {
		return sdk.Text(sdk.CallID() + " " + sdk.SessionID()), nil
	})
	// runs counts its executions in the plugin's KV (the store's: across instances and
	// hosts), for the tool-result cache's tests: each answer says how often it ran.
	sdk.AddToolSchema("runs", "Count this tool's executions", object, func(args json.RawMessage) (sdk.CallToolResult, error) {
		v, _, err := sdk.KVGet("runs")
		if err != nil {
			return sdk.CallToolResult{}, err
		}
		var n int
		fmt.Sscan(string(v), &n)
		n++
		if err := sdk.KVSet("runs", []byte(fmt.Sprint(n))); err != nil {
			return sdk.CallToolResult{}, err
		}
		return sdk.Text(fmt.Sprintf("run #%d for %s", n, args)), nil
	})
	sdk.AddToolSchema("finish", "End the run", object, func(args json.RawMessage) (sdk.CallToolResult, error) {
		return sdk.Final("all done", json.RawMessage(`{"answer":42}`)), nil
	})
}

// permit (kind "permission", when the same module is loaded a second time as a
// permission plugin) decides by the call's arguments: {"deny": true} is denied,
// {"ask": true} goes to a human, {"fail": true} makes the plugin fail, anything
// else is allowed.
func permit(in sdk.PermitInput) (sdk.PermitResult, error) {
	var args struct{ Deny, Ask, Fail bool }
	_ = json.Unmarshal(in.Arguments, &args)
	switch {
	case args.Fail:
		return sdk.PermitResult{}, fmt.Errorf("cannot decide %s", in.CallID)
	case args.Deny:
		return sdk.PermitResult{Decision: sdk.PermitDeny, Reason: fmt.Sprintf("%s may not run in %s", in.Tool, in.SessionID)}, nil
	case args.Ask:
		return sdk.PermitResult{Decision: sdk.PermitAsk}, nil
	}
	return sdk.PermitResult{Decision: sdk.PermitAllow}, nil
}

func init() { sdk.OnPermit(permit) }
