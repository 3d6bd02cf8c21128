package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestWASICommandTool(t *testing.T) {
	r := newTestRuntime(t)
	p := load(t, r, Config{Name: "shout", Wasm: fixtures.wasicmd, Args: []string{"shout", "--loud"},
		Tools:       []ToolDecl{{Name: "shout", Description: "upper-case a text"}},
		Permissions: Permissions{Timeout: 2 * time.Second, MaxInput: 64}})
	if p.ABI() != ABIWASI {
		t.Fatalf("abi %s, want wasi detected from _start", p.ABI())
	}
	wantResult(t, callTool(t, p, "shout", `{"text":"hello"}`), false, "--loud: HELLO")
	wantResult(t, callTool(t, p, "shout", `{"text":"json"}`), true, "structured")
	wantResult(t, callTool(t, p, "shout", `{"text":"fail"}`), true, "exited with code 4: asked to fail")
	wantResult(t, callTool(t, p, "shout", `{"text":"`+strings.Repeat("x", 100)+`"}`), true,
		`plugin "shout": _start: input 111 bytes exceeds max_input 64 bytes`)
	misbehave(t, r, 2*time.Second, func() CallResult { return callTool(t, p, "shout", `{"text":"spin"}`) },
		true, `plugin "shout": _start: timed out after 2s`)
	wantResult(t, callTool(t, p, "shout", `{"text":"again"}`), false, "--loud: AGAIN")
}

func TestWASIToolsHaveTheirOwnArgvAndLearnTheirName(t *testing.T) {
	r := newTestRuntime(t)
	p := load(t, r, Config{Name: "multi", Wasm: fixtures.wasicmd, Args: []string{"multi", "--shared"},
		Tools:       []ToolDecl{{Name: "encode", Args: []string{"multi", "encode", "--fast"}}, {Name: "plain"}},
		Permissions: Permissions{Timeout: 5 * time.Second}})
	wantResult(t, callTool(t, p, "encode", `{"text":"whoami"}`), false, "encode multi encode --fast")
	wantResult(t, callTool(t, p, "plain", `{"text":"whoami"}`), false, "plain multi --shared")
}

// A wasi tool learns its call's id, session and run from its environment (the _meta an
// mcp plugin gets): a tool with side effects keys them by the call id, which a resumed
// run repeats for a call whose result was never stored (at least once). A call without
// ids sees none, and the ids cannot override AGENTHOST_TOOL.
func TestWASIToolsLearnTheirCallIDsFromTheEnvironment(t *testing.T) {
	r := newTestRuntime(t)
	p := load(t, r, Config{Name: "ids", Wasm: fixtures.wasicmd, Tools: []ToolDecl{{Name: "ids"}},
		Permissions: Permissions{Timeout: 5 * time.Second}})
	ctx := WithCallMeta(context.Background(), map[string]any{"agenthost/call_id": "call_7",
		"agenthost/session_id": "s1", "agenthost/run_id": "r1", "agenthost/tool": "other", "progressToken": "p"})
	res, err := p.InvokeTool(ctx, "ids", []byte(`{"text":"callenv"}`))
	if err != nil {
		t.Fatal(err)
	}
	wantResult(t, res, false, "call=call_7 session=s1 run=r1 tool=ids")
	wantResult(t, callTool(t, p, "ids", `{"text":"callenv"}`), false, "call= session= run= tool=ids")
}
