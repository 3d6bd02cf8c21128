package bench

import (
	"context"
	"encoding/json"
	"github.com/agenthost/agenthost/bench/fake"
	"testing"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/sandbox"
)

// BenchmarkWarmCall is the warm tool call row: the same greet({"text":"bench"}) →
// "Hello, bench!" three ways, in one process.
//
//   - sandbox: sandbox.Plugin.CallTool on a warm instance of the Go-built guest — the
//     pool, input/output limits, timeout, net guard, argument extraction from the JSON
//     arguments and result decoding: what every Wasm tool call of agenthost pays.
//   - bare-extism: extism's Plugin.Call of the same export on one bare instance (the
//     input string given directly): the Wasm floor.
//   - native-go: a Go loop.Tool that decodes the same JSON arguments and builds the same
//     result: the floor of any tool call.
func BenchmarkWarmCall(b *testing.B) {
	ctx := context.Background()
	b.Run("sandbox", func(b *testing.B) {
		r, err := sandbox.NewRuntime(ctx, sandbox.RuntimeOptions{CacheDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close(ctx)
		p, err := r.Load(ctx, sandbox.Config{Name: "guest", Wasm: fx.goGuest, Tools: greetDecl()})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close(ctx)
		args := []byte(`{"text":"bench"}`)
		if _, err := p.InvokeTool(ctx, "greet", args); err != nil {
			b.Fatal(err)
		}
		fake.WithCPU(b, func() {
			for b.Loop() {
				res, err := p.InvokeTool(ctx, "greet", args)
				if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].Text != "Hello, bench!" {
					b.Fatal(res, err)
				}
			}
		})
	})
	b.Run("bare-extism", func(b *testing.B) { bareExtism(b, wazero.NewRuntimeConfigCompiler()) })
	// The same with the sandbox's runtime configuration: calls that stop when their
	// context ends (a watchdog per call), which the sandbox needs for its timeouts. The
	// like-for-like floor of a sandboxed call.
	b.Run("bare-extism-same-config", func(b *testing.B) {
		bareExtism(b, wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(true))
	})
	b.Run("native-go", func(b *testing.B) {
		tool := loop.FuncTool{ToolSpec: loop.ToolSpec{Name: "greet"},
			Fn: func(_ context.Context, c loop.ToolCall) (loop.ToolResult, error) {
				var in struct{ Text string }
				if err := json.Unmarshal([]byte(c.Arguments), &in); err != nil {
					return loop.ToolResult{}, err
				}
				return loop.TextResult("Hello, " + in.Text + "!"), nil
			}}
		call := loop.ToolCall{ID: "c1", Name: "greet", Arguments: `{"text":"bench"}`}
		fake.WithCPU(b, func() {
			for b.Loop() {
				res, err := tool.Call(ctx, call)
				if err != nil || res.Content[0].Text != "Hello, bench!" {
					b.Fatal(res, err)
				}
			}
		})
	})
}

// bareExtism calls greet on one bare extism instance of the Go guest, with cfg.
func bareExtism(b *testing.B, cfg wazero.RuntimeConfig) {
	ctx := context.Background()
	cp, err := extism.NewCompiledPlugin(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: fx.goGuest}}},
		extism.PluginConfig{EnableWasi: true, RuntimeConfig: cfg}, guestImports(b, fx.goGuest))
	if err != nil {
		b.Fatal(err)
	}
	defer cp.Close(ctx)
	in, err := cp.Instance(ctx, extism.PluginInstanceConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close(ctx)
	if _, _, err := in.Call("greet", []byte("warm")); err != nil {
		b.Fatal(err)
	}
	fake.WithCPU(b, func() {
		for b.Loop() {
			_, out, err := in.Call("greet", []byte("bench"))
			if err != nil || string(out) != "Hello, bench!" {
				b.Fatal(string(out), err)
			}
		}
	})
}

// greetDecl declares the greet export as a tool whose input is the argument "text".
func greetDecl() []sandbox.ToolDecl {
	return []sandbox.ToolDecl{{Name: "greet", Export: "greet", Input: "text",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)}}
}

// guestImports satisfies every host function the Go guest imports from extism's user
// namespace (kv, create_message, create_elicitation, notify_progress, ...) for the bare
// extism instance, each a stub that returns zeros: greet calls none of them. They are
// read from the module's own import section, so a host function the guest SDK gains
// cannot break the comparison again (it did: create_elicitation).
func guestImports(b *testing.B, wasm []byte) []extism.HostFunction {
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	cm, err := r.CompileModule(ctx, wasm)
	if err != nil {
		b.Fatal(err)
	}
	var out []extism.HostFunction
	for _, f := range cm.ImportedFunctions() {
		if mod, name, _ := f.Import(); mod == "extism:host/user" {
			results := f.ResultTypes()
			stub := func(_ context.Context, _ *extism.CurrentPlugin, s []uint64) { clear(s[:len(results)]) }
			out = append(out, extism.NewHostFunctionWithStack(name, stub, f.ParamTypes(), results))
		}
	}
	if len(out) == 0 {
		b.Fatal("the Go guest imports no user host function: guestImports is out of date")
	}
	return out
}
