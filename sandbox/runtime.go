package sandbox

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"

	"github.com/tetratelabs/wazero"
)

// RuntimeOptions configures a Runtime.
type RuntimeOptions struct {
	// CacheDir holds compiled machine code across process restarts. Empty
	// keeps the cache in memory only (still shared by every plugin loaded
	// through this Runtime).
	CacheDir string
}

// Runtime is shared by all plugins of a process: it owns the compilation
// cache, so loading the same module twice (or after a restart, with a
// CacheDir) skips compilation.
type Runtime struct {
	cache wazero.CompilationCache
}

// NewRuntime creates a Runtime. Close it after every plugin is closed.
func NewRuntime(ctx context.Context, opts RuntimeOptions) (*Runtime, error) {
	var cache wazero.CompilationCache
	if opts.CacheDir != "" {
		if err := os.MkdirAll(opts.CacheDir, 0o755); err != nil {
			return nil, fmt.Errorf("sandbox: compilation cache: %w", err)
		}
		c, err := wazero.NewCompilationCacheWithDir(opts.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("sandbox: compilation cache %s: %w", opts.CacheDir, err)
		}
		cache = c
	} else {
		cache = wazero.NewCompilationCache()
	}
	return &Runtime{cache: cache}, nil
}

// Close releases the compilation cache (the files in CacheDir stay).
func (r *Runtime) Close(ctx context.Context) error {
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
