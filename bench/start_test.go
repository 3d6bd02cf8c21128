package bench

import (
	"context"
	"github.com/agenthost/agenthost/bench/fake"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/agenthost/agenthost/sandbox"
)

// BenchmarkStart is the plugin start row, for a Go-built plugin (sandbox/testdata/guest,
// 3.5 MB with the Go runtime) and a C-built one (bench/testdata/cgreet, 1 KB), each
// exporting greet. One op is what a host process start costs the sandbox: a new Runtime
// on a compilation cache directory, Load, and a first tool call.
//
//   - first: the cache directory is empty, so Load compiles the module (a first start).
//   - cached: the directory holds the compiled module from an earlier start (a restart).
func BenchmarkStart(b *testing.B) {
	for _, g := range []struct {
		name string
		wasm []byte
	}{{"go", fx.goGuest}, {"c", fx.cGuest}} {
		b.Run(g.name+"/first", func(b *testing.B) {
			dir := b.TempDir()
			i := 0
			fake.WithCPU(b, func() {
				for b.Loop() {
					i++
					startOnce(b, g.wasm, filepath.Join(dir, strconv.Itoa(i)))
				}
			})
		})
		b.Run(g.name+"/cached", func(b *testing.B) {
			dir := b.TempDir()
			startOnce(b, g.wasm, dir)
			fake.WithCPU(b, func() {
				for b.Loop() {
					startOnce(b, g.wasm, dir)
				}
			})
		})
	}
}

// startOnce is a process start as far as the sandbox is concerned.
func startOnce(b *testing.B, wasm []byte, cacheDir string) {
	ctx := context.Background()
	r, err := sandbox.NewRuntime(ctx, sandbox.RuntimeOptions{CacheDir: cacheDir})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close(ctx)
	p, err := r.Load(ctx, sandbox.Config{Name: "guest", Wasm: wasm, Tools: greetDecl()})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(ctx)
	res, err := p.InvokeTool(ctx, "greet", []byte(`{"text":"start"}`))
	if err != nil || res.IsError || res.Content[0].Text != "Hello, start!" {
		b.Fatal(res, err)
	}
}
