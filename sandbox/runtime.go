package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"sync"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
)

// RuntimeOptions configures a Runtime.
type RuntimeOptions struct {
	// CacheDir holds compiled machine code across process restarts. Empty
	// keeps the cache in memory only (still shared by every plugin loaded
	// through this Runtime).
	CacheDir string
	// OnCompile is called with a plugin's file name (or its name) just before Load
	// compiles a module CacheDir does not hold yet: seconds of work, once, that a
	// CLI can announce instead of looking hung. Never called without a CacheDir.
	OnCompile func(file string)
}

// Runtime is shared by all plugins of a process: it owns the compilation
// cache, so loading the same module twice (or after a restart, with a
// CacheDir) skips compilation.
type Runtime struct {
	cache     wazero.CompilationCache
	marks     string // CacheDir's record of what it holds (compiledMark); "" in memory
	onCompile func(string)
	dir       string   // CacheDir
	snapshots sync.Map // pre-initialised modules by snapshotKey (preinit.go)

	// Compiles of one module are one at a time (compile), and Extism's kernel, which
	// every plugin compiles, stays compiled while the Runtime lives (kernel). Every
	// plugin's wazero runtime shares one engine through the compilation cache, and
	// wazero (v1.12) publishes a module read back from the cache directory to that
	// engine before it has built the module's entry preambles: a second compile of the
	// same module that finds it there instantiates from preambles still being written,
	// a data race the race detector reported (and a crash in waiting). A module already
	// in the engine is shared read-only, so with the kernel kept there and one compile
	// per module at a time, plugins still load at once (LoadAll).
	compiling  sync.Map // module sha256 → *sync.Mutex
	kernelOnce sync.Once
	kernel     *extism.CompiledPlugin // an empty module's, holding the kernel in the engine
	kernelErr  error
}

// compile runs f, a compile of the module whose sha256 is sum against the shared cache,
// once Extism's kernel is held in the engine and while no other compile of the same
// module runs (see Runtime.compiling).
func (r *Runtime) compile(ctx context.Context, sum [32]byte, f func() error) error {
	r.kernelOnce.Do(func() {
		// Not the caller's cancellation: the kernel serves every later load.
		r.kernel, r.kernelErr = extism.NewCompiledPlugin(context.WithoutCancel(ctx), extism.Manifest{
			Wasm: []extism.Wasm{extism.WasmData{Data: []byte("\x00asm\x01\x00\x00\x00")}},
		}, extism.PluginConfig{RuntimeConfig: r.runtimeConfig(), EnableWasi: true}, nil)
	})
	if r.kernelErr != nil {
		return fmt.Errorf("extism kernel: %w", r.kernelErr)
	}
	mu, _ := r.compiling.LoadOrStore(sum, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	return f()
}

// NewRuntime creates a Runtime. Close it after every plugin is closed.
func NewRuntime(ctx context.Context, opts RuntimeOptions) (*Runtime, error) {
	var cache wazero.CompilationCache
	var marks string
	if opts.CacheDir != "" {
		if err := os.MkdirAll(opts.CacheDir, 0o755); err != nil {
			return nil, fmt.Errorf("sandbox: compilation cache: %w", err)
		}
		c, err := wazero.NewCompilationCacheWithDir(opts.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("sandbox: compilation cache %s: %w", opts.CacheDir, err)
		}
		cache = c
		marks = filepath.Join(opts.CacheDir, "agenthost-compiled-"+wazeroVersion()+"-"+goruntime.GOARCH+"-"+goruntime.GOOS)
	} else {
		cache = wazero.NewCompilationCache()
	}
	return &Runtime{cache: cache, marks: marks, onCompile: opts.OnCompile, dir: opts.CacheDir}, nil
}

// wazero keys its cache files on the module, the CPU and magic of its own, under a
// directory per wazero version, and exposes neither the keys nor hits and misses. So
// the Runtime keeps its own record beside them: one empty file per module it compiled
// into CacheDir (named by the sha256 of the bytes compiled), under a directory named
// as wazero's is, so a wazero upgrade (which recompiles everything) starts a new one.
// Removing CacheDir removes both. Only deleting wazero's files alone makes the record
// wrong, and then only the progress line is missed.
func wazeroVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/tetratelabs/wazero" {
				return dep.Version
			}
		}
	}
	return wazeroVersionUnlisted
}

// wazeroVersionUnlisted is wazeroVersion's answer in a program whose build information
// lists no modules: go test's binaries, where wazero too says "dev". `make test` sets it
// (-ldflags -X), with wazero's own version variable, to go.mod's wazero version, so that
// the test processes and the agenthost processes they start (whose build information
// lists wazero) name the same directories and keys, and share one compilation cache
// instead of compiling each module, and making each snapshot, once per side.
var wazeroVersionUnlisted = "dev"

// compiledMark is the record in CacheDir of the module whose sha256 is sum, or "" with
// no CacheDir.
func (r *Runtime) compiledMark(sum [32]byte) string {
	if r.marks == "" {
		return ""
	}
	return filepath.Join(r.marks, hex.EncodeToString(sum[:]))
}

// beforeCompile announces the compile of the module whose sha256 is sum when CacheDir
// does not hold it; the function returned records it there once the compile succeeded.
func (r *Runtime) beforeCompile(sum [32]byte, file string) (compiled func()) {
	mark := r.compiledMark(sum)
	if mark == "" {
		return func() {}
	}
	if _, err := os.Stat(mark); err == nil {
		return func() {}
	}
	if r.onCompile != nil {
		r.onCompile(file)
	}
	return func() {
		if os.MkdirAll(r.marks, 0o755) == nil {
			_ = os.WriteFile(mark, nil, 0o644) // at worst the line shows again next time
		}
	}
}

// Close releases the compilation cache (the files in CacheDir stay).
func (r *Runtime) Close(ctx context.Context) error {
	if r.kernel != nil {
		_ = r.kernel.Close(ctx)
	}
	return r.cache.Close(ctx)
}

// runtimeConfig is the wazero configuration of every plugin: the compiler
// engine, the shared cache, and calls that stop when their context ends (the
// per-call timeout relies on it). The memory ceiling is not set here but by
// limitedMemory, which can tell that a plugin hit it.
func (r *Runtime) runtimeConfig() wazero.RuntimeConfig {
	return wazero.NewRuntimeConfigCompiler().
		WithCompilationCache(r.cache).
		WithCloseOnContextDone(true)
}

// moduleConfig gives a guest real clocks and randomness (wazero's defaults
// are deterministic fakes, fine for tests but wrong for "what time is it"),
// the granted environment and mounts, and nothing else. Its sleep is left
// to each instance (newInstance, callWASI): one that ends with the call the
// instance serves (callClock, blocking.go), which a shared config cannot
// know. Left unset, wazero's sleep returns at once, never blocks.
func moduleConfig(perms Permissions, env map[string]string, fs wazero.FSConfig) wazero.ModuleConfig {
	mc := wazero.NewModuleConfig().
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader)
	for _, name := range perms.Env {
		if v, ok := env[name]; ok {
			mc = mc.WithEnv(name, v)
		}
	}
	if fs != nil {
		mc = mc.WithFSConfig(fs)
	}
	return mc
}
