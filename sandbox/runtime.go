package sandbox

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"sync"

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
	return "dev"
}

// compiledMark is the record of wasm in CacheDir, or "" with no CacheDir.
func (r *Runtime) compiledMark(wasm []byte) string {
	if r.marks == "" {
		return ""
	}
	sum := sha256.Sum256(wasm)
	return filepath.Join(r.marks, hex.EncodeToString(sum[:]))
}

// beforeCompile announces the compile of wasm when CacheDir does not hold it; the
// function returned records it there once the compile succeeded.
func (r *Runtime) beforeCompile(wasm []byte, file string) (compiled func()) {
	mark := r.compiledMark(wasm)
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
