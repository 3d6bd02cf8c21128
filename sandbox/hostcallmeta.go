package sandbox

import (
	"context"
	"encoding/json"

	extism "github.com/extism/go-sdk"
)

// callMetaFunc is the host function call_meta() -> i64: the current call's ids as a JSON
// object, {"call_id": …, "session_id": …, "run_id": …} (what WithCallMeta carries under
// "agenthost/", the names as callEnv gives them, lower-case), or {} for a call that has
// none. An mcp plugin gets the same in its request's _meta and a wasi command in its
// environment; an Extism plugin's instances are pooled and configured once, so a
// per-call value cannot be its config and is asked for instead. With the call id a tool
// with side effects recognises a call it already served: tool calls are at least once
// (plugins/sdk/ABI.md).
func (p *Plugin) callMetaFunc() extism.HostFunction {
	return extism.NewHostFunctionWithStack("call_meta", func(ctx context.Context, cp *extism.CurrentPlugin, stack []uint64) {
		stack[0] = p.hostWrite(ctx, cp, "call_meta", callMetaJSON(callMetaOf(ctx)))
	}, nil, []extism.ValueType{extism.ValueTypeI64})
}

// callMetaJSON is the object call_meta returns, from the same filtered pairs as callEnv.
func callMetaJSON(meta map[string]any) []byte {
	obj := map[string]string{}
	for _, kv := range callEnv(meta) {
		obj[lowerEnvName(kv[0])] = kv[1]
	}
	b, _ := json.Marshal(obj) // a map of strings always marshals
	return b
}

// lowerEnvName turns AGENTHOST_CALL_ID back into call_id.
func lowerEnvName(env string) string {
	b := []byte(env[len("AGENTHOST_"):])
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}
