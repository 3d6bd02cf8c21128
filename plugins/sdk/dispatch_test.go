package sdk

import (
	"errors"
	"testing"
)

// These tests run natively: the dispatch functions are what the Wasm exports
// call, minus reading the input and setting the output.

type echoArgs struct {
	Text string `json:"text"`
}

func init() {
	AddTool("echo", "Echo text", func(a echoArgs) (CallToolResult, error) {
		switch a.Text {
		case "fail":
			return CallToolResult{}, errors.New("echo: asked to fail")
		case "panic":
			panic("boom")
		case "whoami":
			return Text(CallID() + " " + SessionID()), nil
		}
		return Text(a.Text), nil
	})
}

func TestDispatchTools(t *testing.T) {
	for _, c := range []struct{ handler, in, want string }{
		{"describe", `{}`, `{"tools":[{"name":"echo","description":"Echo text","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}]}`},
		{"call", `{"params":{"name":"echo","arguments":{"text":"hi"}}}`, `{"content":[{"type":"text","text":"hi"}],"isError":false}`},
		{"call_tool", `{"request":{"name":"echo","arguments":{"text":"v2"}},"context":{"_meta":{},"id":1}}`, `{"content":[{"type":"text","text":"v2"}],"isError":false}`},
		{"call", `{"params":{"name":"echo","arguments":{"text":"fail"}}}`, `{"content":[{"type":"text","text":"echo: asked to fail"}],"isError":true}`},
		{"call", `{"params":{"name":"echo","arguments":{"text":"panic"}}}`, `{"content":[{"type":"text","text":"echo: panic: boom"}],"isError":true}`},
		{"call", `{"params":{"name":"echo","arguments":{"text":3}}}`, `{"content":[{"type":"text","text":"echo: invalid arguments: json: cannot unmarshal number into Go struct field echoArgs.text of type string"}],"isError":true}`},
		{"call", `{"params":{"name":"echo"}}`, `{"content":[{"type":"text"}],"isError":false}`},
		{"call", `{"params":{"name":"other","arguments":{}}}`, `{"content":[{"type":"text","text":"unknown tool \"other\""}],"isError":true}`},
	} {
		h := map[string]func([]byte) ([]byte, error){"describe": HandleDescribe, "call": HandleCall, "call_tool": HandleCallTool}[c.handler]
		got, err := h([]byte(c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("%s(%s) = %s, %v\nwant %s", c.handler, c.in, got, err, c.want)
		}
	}
	if _, err := HandleCall([]byte(`[]`)); err == nil {
		t.Error("call with a non-object input must fail")
	}
}

func TestDispatchHooks(t *testing.T) {
	if _, err := HandleGuard([]byte(`{}`)); err == nil || err.Error() != "guard: no handler (call sdk.OnGuard in init)" {
		t.Fatalf("guard without handler: %v", err)
	}
	if out, err := HandleOnStep([]byte(`{}`)); err != nil || string(out) != `{"verdict":""}` {
		t.Fatalf("on_step without handler = %s, %v", out, err)
	}
	OnGuard(func(in GuardInput) (GuardResult, error) {
		if in.Stage != StageToolResult || in.Tool != "t" {
			return GuardResult{}, errors.New("bad input")
		}
		return GuardResult{Action: Redact, Content: "[x]"}, nil
	})
	out, err := HandleGuard([]byte(`{"stage":"tool_result","content":"secret","tool":"t"}`))
	if err != nil || string(out) != `{"action":"redact","content":"[x]"}` {
		t.Fatalf("guard = %s, %v", out, err)
	}
	if _, err := HandleGuard([]byte(`{"stage":"input"}`)); err == nil || err.Error() != "guard: bad input" {
		t.Fatalf("guard error = %v", err)
	}
	OnContextBuild(func(in ContextInput) (ContextOutput, error) {
		return ContextOutput{Messages: in.Messages[len(in.Messages)-1:]}, nil
	})
	out, err = HandleContextBuild([]byte(`{"history":[],"messages":[{"role":"system"},{"role":"user","content":[{"type":"text","text":"hi"}]}],"budget":0,"overflow":false}`))
	if err != nil || string(out) != `{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}` {
		t.Fatalf("context_build = %s, %v", out, err)
	}
	if _, err := HandleContextBuild([]byte(`nope`)); err == nil {
		t.Fatal("context_build with bad JSON must fail")
	}
}

func TestHostStubsOutsideWasm(t *testing.T) {
	if _, err := Ask("", "hi", 10); !errors.Is(err, ErrNotInWasm) {
		t.Fatalf("Ask outside wasm: %v", err)
	}
	if err := KVSet("k", nil); !errors.Is(err, ErrNotInWasm) {
		t.Fatalf("KVSet outside wasm: %v", err)
	}
}

func TestTokenHelpers(t *testing.T) {
	m := Message{Role: "assistant", Content: []Part{{Type: "text", Text: "12345"}},
		ToolCalls: []ToolCall{{Name: "calc", Arguments: `{"a":1}`}}}
	if got := EstimateTokens(m); got != (5+4+7+3)/4+4 {
		t.Fatalf("EstimateTokens = %d", got)
	}
	sys, rest := SplitSystem([]Message{{Role: "system"}, {Role: "tool"}, {Role: "user"}})
	if len(sys) != 1 || len(rest) != 2 || len(DropOrphanToolResults(rest)) != 1 {
		t.Fatalf("SplitSystem/DropOrphanToolResults: %v %v", sys, rest)
	}
	if n, err := ConfigInt("keep", 7); n != 7 || err != nil {
		t.Fatalf("ConfigInt default = %d, %v", n, err)
	}
}

func TestCallIDIsTheServedCallsAndOnlyWhileItIsServed(t *testing.T) {
	const meta = `{"agenthost/call_id":"call-7","agenthost/session_id":"s1","agenthost/run_id":"r1"}`
	for _, c := range []struct {
		handler func([]byte) ([]byte, error)
		in      string
	}{
		{HandleCall, `{"params":{"name":"echo","arguments":{"text":"whoami"},"_meta":` + meta + `}}`},
		{HandleCallTool, `{"request":{"name":"echo","arguments":{"text":"whoami"},"_meta":` + meta + `},"context":{"_meta":{},"id":1}}`},
		{HandleCallTool, `{"request":{"name":"echo","arguments":{"text":"whoami"}},"context":{"_meta":` + meta + `,"id":2}}`},
	} {
		got, err := c.handler([]byte(c.in))
		if want := `{"content":[{"type":"text","text":"call-7 s1"}],"isError":false}`; err != nil || string(got) != want {
			t.Errorf("%s = %s, %v\nwant %s", c.in, got, err, want)
		}
		if CallID() != "" || SessionID() != "" {
			t.Fatalf("after the call: CallID %q, SessionID %q", CallID(), SessionID())
		}
	}
	got, _ := HandleCall([]byte(`{"params":{"name":"echo","arguments":{"text":"whoami"}}}`))
	if want := `{"content":[{"type":"text","text":" "}],"isError":false}`; string(got) != want {
		t.Errorf("a call without _meta: %s, want %s", got, want)
	}
}
