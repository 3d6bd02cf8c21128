package sandbox

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
)

// Measured, never asserted: see BENCHMARKS.md for the figures and command.

// BenchmarkWarmCall is a tool call through the sandbox (pool, limits, guards,
// result decoding) on a warm instance of the Go-built guest.
func BenchmarkWarmCall(b *testing.B) {
	r := newTestRuntime(b)
	p := load(b, r, Config{Name: "guest", Wasm: fixtures.guest, Tools: extismTool("greet")})
	callTool(b, p, "greet", `{"text":"warm"}`)
	b.ResetTimer()
	for b.Loop() {
		res, err := p.InvokeTool(context.Background(), "greet", []byte(`{"text":"bench"}`))
		if err != nil || res.Text() != "Hello, bench!" {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkWarmCallBareExtism is the same export called on a bare extism
// instance: the baseline of BenchmarkWarmCall.
func BenchmarkWarmCallBareExtism(b *testing.B) {
	ctx := context.Background()
	cp, err := extism.NewCompiledPlugin(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: fixtures.guest}}},
		extism.PluginConfig{EnableWasi: true, RuntimeConfig: wazero.NewRuntimeConfigCompiler()},
		// The guest imports the sandbox's host functions; greet calls none.
		(&Plugin{name: "bare", perms: Permissions{}.withDefaults()}).hostFunctions())
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
	b.ResetTimer()
	for b.Loop() {
		_, out, err := in.Call("greet", []byte("bench"))
		if err != nil || string(out) != "Hello, bench!" {
			b.Fatal(string(out), err)
		}
	}
}

// BenchmarkStartColdCache loads the Go-built guest with an empty cache
// directory: a first start, compiling the module.
func BenchmarkStartColdCache(b *testing.B) {
	dir := b.TempDir()
	i := 0
	for b.Loop() {
		i++
		startOnce(b, filepath.Join(dir, strconv.Itoa(i)))
	}
}

// BenchmarkStartWarmCache loads it again from a populated cache directory in
// a fresh Runtime: a second start after a restart.
func BenchmarkStartWarmCache(b *testing.B) {
	dir := b.TempDir()
	startOnce(b, dir)
	for b.Loop() {
		startOnce(b, dir)
	}
}

// startOnce is a process start as far as the sandbox is concerned: a new
// Runtime on dir, Load, and a first call.
func startOnce(b *testing.B, dir string) {
	ctx := context.Background()
	r, err := NewRuntime(ctx, RuntimeOptions{CacheDir: dir})
	if err != nil {
		b.Fatal(err)
	}
	p, err := r.Load(ctx, Config{Name: "guest", Wasm: fixtures.guest, Tools: extismTool("greet")})
	if err != nil {
		b.Fatal(err)
	}
	if res, err := p.InvokeTool(ctx, "greet", []byte(`{"text":"start"}`)); err != nil || res.IsError {
		b.Fatal(res, err)
	}
	p.Close(ctx)
	r.Close(ctx)
}

// BenchmarkIsolation is a warm tool call under each isolation setting, every
// call in the same session ("session" reuses its instance, "call"
// instantiates one per call). Compare the ns/op of one run: see README.md.
func BenchmarkIsolation(b *testing.B) {
	for _, iso := range []string{IsolationPooled, IsolationSession, IsolationCall} {
		b.Run(iso, func(b *testing.B) {
			r := newTestRuntime(b)
			p := load(b, r, Config{Name: "guest", Wasm: fixtures.guest, Tools: extismTool("greet"),
				Permissions: Permissions{Isolation: iso}})
			ctx := WithSession(context.Background(), "bench")
			args := []byte(`{"text":"bench"}`)
			if _, err := p.InvokeTool(ctx, "greet", args); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				res, err := p.InvokeTool(ctx, "greet", args)
				if err != nil || res.Text() != "Hello, bench!" {
					b.Fatal(res, err)
				}
			}
		})
	}
	// "call" with the guest pre-initialised (Config.Preinit): each fresh instance starts
	// from the snapshot taken after _initialize.
	b.Run("call-preinit", func(b *testing.B) {
		p := load(b, newTestRuntime(b), Config{Name: "guest", Wasm: fixtures.guest, Tools: extismTool("greet"),
			Permissions: Permissions{Isolation: IsolationCall}, Preinit: PreinitOn})
		args := []byte(`{"text":"bench"}`)
		for b.Loop() {
			res, err := p.InvokeTool(context.Background(), "greet", args)
			if err != nil || res.Text() != "Hello, bench!" {
				b.Fatal(res, err)
			}
		}
	})
	// Worst case of "session": every call from a session not seen before.
	b.Run("session-new-each-call", func(b *testing.B) {
		p := load(b, newTestRuntime(b), Config{Name: "guest", Wasm: fixtures.guest, Tools: extismTool("greet")})
		args := []byte(`{"text":"bench"}`)
		i := 0
		for b.Loop() {
			i++
			res, err := p.InvokeTool(WithSession(context.Background(), strconv.Itoa(i)), "greet", args)
			if err != nil || res.Text() != "Hello, bench!" {
				b.Fatal(res, err)
			}
		}
	})
}
