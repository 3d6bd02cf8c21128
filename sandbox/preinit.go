package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/agenthost/agenthost/sandbox/internal/wasmbin"
)

// Pre-initialisation (Config.Preinit; README.md, "Pre-initialisation"):
// a Go plugin's _initialize starts the Go runtime and runs every package's
// init, the larger part of a fresh instance's cost. Run once, at Load, and
// its result (the linear memory and the mutable globals) written into a new
// module as data segments and global initialisers, it need not run again:
// every instance of the new module starts where _initialize left the first.
//
// It is offered only for modules whose whole state after _initialize is
// that memory and those globals (wasmbin.ParseReactor refuses the rest),
// and whose _initialize called nothing but the WASI functions below, whose
// answers are the same for every instance of a plugin (its arguments,
// environment and mounts are fixed at Load) or are of a kind a snapshot may
// freeze (the time, random bytes: the Go runtime's seeds).
var preinitWASI = map[string]bool{
	"args_get": true, "args_sizes_get": true, "environ_get": true, "environ_sizes_get": true,
	"clock_res_get": true, "clock_time_get": true, "random_get": true,
	"fd_prestat_get": true, "fd_prestat_dir_name": true, "fd_fdstat_get": true,
	"sched_yield": true, "poll_oneoff": true, "proc_exit": true,
	// Go's syscall package asks for non-blocking stdio. The sandbox's stdio
	// are in-memory streams, which refuse the flag (ENOSYS) and so keep no
	// state; on any other descriptor the call is refused (linkInitImports).
	"fd_fdstat_set_flags": true,
}

// preinitFormat is part of every snapshot's cache key: bump it when what
// a snapshot holds changes.
const preinitFormat = "2" // 2: mounts in guest-path order (fsguard.go), snapshots of 1 may hold another

// snapshotEntry is one snapshot of a Runtime, made at most once at a time,
// and kept here only without a CacheDir; or why none can be made.
type snapshotEntry struct {
	mu      sync.Mutex
	wasm    []byte
	refused error // a refusal that does not change with another try (not a timeout)
}

// errInitTimeout is wrapped by the error of an _initialize that ran out of time: a
// busier moment may not, so the refusal is not kept.
var errInitTimeout = errors.New("_initialize did not finish within the timeout")

// preinit returns the module Load compiles: wasm itself with PreinitOff, else
// its pre-initialised module (snapshot); it then sets p's clock and exports
// to match. A module that cannot be pre-initialised is an error with
// PreinitOn and served as built with PreinitIfSafe (p.preinitNot says why).
func (r *Runtime) preinit(ctx context.Context, mode PreinitMode, p *Plugin, wasm []byte, env map[string]string) ([]byte, error) {
	if mode == PreinitOff {
		p.preinitNot = errPreinitOff
		return wasm, nil
	}
	snap, err := r.snapshot(ctx, p, wasm, env)
	if err != nil {
		if mode == PreinitOn || ctx.Err() != nil {
			return nil, err
		}
		p.preinitNot = err
		return wasm, nil
	}
	floor, _ := wasmbin.Clock(snap)
	// The guest's monotonic clock goes on from where _initialize left it
	// (the Go runtime keeps its readings: timers, its start time), in this
	// process or a later one.
	base := time.Now()
	p.moduleConfig = p.moduleConfig.WithNanotime(func() int64 { return int64(floor) + int64(time.Since(base)) }, 1)
	delete(p.exports, wasmbin.InitExport)
	p.exportsL = slices.DeleteFunc(p.exportsL, func(s string) bool { return s == wasmbin.InitExport })
	return snap, nil
}

// Preinitialised says whether the plugin's instances start from a snapshot
// (Config.Preinit) and, when they do not, why: the mode was off, or the
// reason a PreinitIfSafe module was served as built.
func (p *Plugin) Preinitialised() (ok bool, why string) {
	if p.preinitNot != nil {
		return false, p.preinitNot.Error()
	}
	return true, ""
}

// errPreinitOff is Plugin.Preinitialised's answer for a plugin loaded with PreinitOff.
var errPreinitOff = errors.New("pre-initialisation is off")

// snapshot returns wasm's pre-initialised module, from the Runtime's memory,
// from CacheDir, or made now and kept in both; or why it cannot be made.
func (r *Runtime) snapshot(ctx context.Context, p *Plugin, wasm []byte, env map[string]string) ([]byte, error) {
	if p.abi.name() == ABIWASI {
		return nil, errors.New("pre-initialisation: a wasi command runs _start at every call; preinit is for reactors (abi mcp or extism)")
	}
	m, err := wasmbin.ParseReactor(wasm)
	if err != nil {
		return nil, fmt.Errorf("pre-initialisation refused: %w", err)
	}
	key := snapshotKey(p, env)
	v, _ := r.snapshots.LoadOrStore(key, &snapshotEntry{})
	e := v.(*snapshotEntry)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.refused != nil {
		return nil, e.refused
	}
	snap := e.wasm
	if snap == nil {
		snap = r.readSnapshot(key)
	}
	if snap == nil {
		if snap, err = makeSnapshot(ctx, m, p.moduleConfig, p.perms); err != nil {
			if ctx.Err() == nil && !errors.Is(err, errInitTimeout) {
				e.refused = err // the same module, seeing the same things, does the same again
			}
			return nil, err
		}
		r.writeSnapshot(key, snap)
	}
	if r.dir == "" { // with a CacheDir, the file is the copy kept
		e.wasm = snap
	}
	return snap, nil
}

// snapshotKey names a snapshot by everything _initialize could see: the
// module, the host build, its environment variables, its mounts' names
// and its memory limit.
func snapshotKey(p *Plugin, env map[string]string) string {
	h := sha256.New()
	fmt.Fprintf(h, "format %s\nhost %s\nwazero %s\nmodule %s\npages %d\n", preinitFormat, hostVersion(), wazeroVersion(), p.digest, p.perms.memoryPages())
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(h, "env %q=%q\n", k, env[k])
	}
	var mounts []string
	for host, guest := range p.perms.AllowedPaths {
		mounts = append(mounts, fmt.Sprintf("%q %v", guest, strings.HasPrefix(host, "ro:")))
	}
	sort.Strings(mounts)
	fmt.Fprintf(h, "mounts %q\n", mounts)
	return hex.EncodeToString(h.Sum(nil))
}

// hostVersion identifies the build of the running program.
func hostVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.GoVersion + " " + info.Main.Path + "@" + info.Main.Version
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" || s.Key == "vcs.modified" {
			v += " " + s.Key + "=" + s.Value
		}
	}
	return v
}

func (r *Runtime) snapshotPath(key string) string {
	if r.dir == "" {
		return ""
	}
	return filepath.Join(r.dir, "agenthost-preinit-"+wazeroVersion(), key+".wasm")
}

// readSnapshot returns the snapshot CacheDir holds for key, or nil.
func (r *Runtime) readSnapshot(key string) []byte {
	path := r.snapshotPath(key)
	if path == "" {
		return nil
	}
	b, err := readModule(path)
	if err != nil {
		return nil
	}
	if _, ok := wasmbin.Clock(b); !ok {
		return nil // not one of ours, or cut short: make it again
	}
	return b
}

// writeSnapshot keeps a snapshot in CacheDir, whole or not at all.
func (r *Runtime) writeSnapshot(key string, wasm []byte) {
	path := r.snapshotPath(key)
	if path == "" || os.MkdirAll(filepath.Dir(path), 0o755) != nil {
		return
	}
	f, err := os.CreateTemp(filepath.Dir(path), key+".*.tmp")
	if err != nil {
		return
	}
	_, err = f.Write(wasm)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name()) // at worst the snapshot is made again next time
	}
}

// initCalls records the host functions _initialize called.
type initCalls struct {
	mu     sync.Mutex
	called []string // "module.name", first call of each, in order
}

func (c *initCalls) record(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Contains(c.called, name) {
		c.called = append(c.called, name)
	}
}

// refused returns the calls preinitWASI does not allow.
func (c *initCalls) refused() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, name := range c.called {
		fn, ok := strings.CutPrefix(name, wasi_snapshot_preview1.ModuleName+".")
		if !ok || !preinitWASI[fn] {
			out = append(out, name)
		}
	}
	return out
}

// errInitHostCall ends _initialize at a host function that is not WASI.
var errInitHostCall = errors.New("called a host function")

// makeSnapshot runs m's _initialize once, in a runtime of its own with the
// plugin's module configuration and limits, and returns the module that
// starts where it ended. WASI functions are wazero's own, listened to;
// any other import traps.
func makeSnapshot(ctx context.Context, m *wasmbin.Reactor, mc wazero.ModuleConfig, perms Permissions) ([]byte, error) {
	// The interpreter: _initialize runs once, and compiling a Go module for
	// the compiler engine costs far more than interpreting its runtime's start.
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().
		WithMemoryLimitPages(perms.memoryPages()).WithCloseOnContextDone(true))
	defer rt.Close(context.WithoutCancel(ctx))
	calls := &initCalls{}
	if err := linkInitImports(ctx, rt, m.Imports(), calls); err != nil {
		return nil, fmt.Errorf("pre-initialisation: %w", err)
	}
	compiled, err := rt.CompileModule(ctx, m.Instrument())
	if err != nil {
		return nil, fmt.Errorf("pre-initialisation: compile: %w", err)
	}
	start := time.Now()
	clock := func() int64 { return int64(time.Since(start)) }
	mod, err := rt.InstantiateModule(ctx, compiled, mc.WithName("").WithStartFunctions().
		WithNanotime(clock, 1).WithStdout(io.Discard).WithStderr(io.Discard))
	if err != nil {
		return nil, fmt.Errorf("pre-initialisation: instantiate: %w", err)
	}
	tctx, cancel := context.WithTimeout(ctx, perms.Timeout)
	defer cancel()
	_, err = mod.ExportedFunction(wasmbin.InitExport).Call(tctx)
	if bad := calls.refused(); len(bad) > 0 {
		return nil, fmt.Errorf("pre-initialisation refused: _initialize called %s; it may call only the WASI functions %s",
			strings.Join(bad, ", "), strings.Join(sortedKeys(preinitWASI), ", "))
	}
	if err != nil {
		if tctx.Err() != nil {
			return nil, fmt.Errorf("pre-initialisation: %w %s", errInitTimeout, perms.Timeout)
		}
		return nil, fmt.Errorf("pre-initialisation: _initialize failed: %w", err)
	}
	snap := wasmbin.Snapshot{Globals: map[int]uint64{}, Clock: uint64(clock())}
	for _, i := range m.MutableGlobals() {
		g := mod.ExportedGlobal(fmt.Sprint(wasmbin.GlobalExportPrefix, i))
		if g == nil {
			return nil, fmt.Errorf("pre-initialisation: global %d not exported", i)
		}
		snap.Globals[i] = g.Get()
	}
	mem := mod.Memory()
	snap.Memory, _ = mem.Read(0, mem.Size())
	out, err := m.Snapshot(snap, dataSegmentGap)
	if err != nil {
		return nil, fmt.Errorf("pre-initialisation: %w", err)
	}
	return out, nil
}

// linkInitImports provides m's imports in rt: wazero's WASI, with every
// call recorded, and for every other module functions that record the call
// and trap.
func linkInitImports(ctx context.Context, rt wazero.Runtime, imports []wasmbin.FuncImport, calls *initCalls) error {
	listen := experimental.WithFunctionListenerFactory(ctx, experimental.FunctionListenerFactoryFunc(
		func(def api.FunctionDefinition) experimental.FunctionListener {
			name := wasi_snapshot_preview1.ModuleName + "." + def.Name()
			return experimental.FunctionListenerFunc(func(_ context.Context, _ api.Module, _ api.FunctionDefinition, params []uint64, _ experimental.StackIterator) {
				if def.Name() == "fd_fdstat_set_flags" && len(params) > 0 && uint32(params[0]) > 2 {
					calls.record(fmt.Sprintf("%s(fd %d)", name, uint32(params[0])))
					return
				}
				calls.record(name)
			})
		}))
	if _, err := wasi_snapshot_preview1.Instantiate(listen, rt); err != nil {
		return err
	}
	builders := map[string]wazero.HostModuleBuilder{}
	var order []string
	for _, imp := range imports {
		if imp.Module == wasi_snapshot_preview1.ModuleName {
			continue
		}
		b, ok := builders[imp.Module]
		if !ok {
			b = rt.NewHostModuleBuilder(imp.Module)
			builders[imp.Module] = b
			order = append(order, imp.Module)
		}
		params, results, err := valueTypes(imp)
		if err != nil {
			return err
		}
		name := imp.Module + "." + imp.Name
		b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(context.Context, api.Module, []uint64) {
			calls.record(name)
			panic(errInitHostCall)
		}), params, results).Export(imp.Name)
	}
	for _, mod := range order {
		if _, err := builders[mod].Instantiate(ctx); err != nil {
			return err
		}
	}
	return nil
}

// valueTypes converts an import's signature; wazero's value types are the
// binary format's bytes.
func valueTypes(imp wasmbin.FuncImport) (params, results []api.ValueType, err error) {
	for _, list := range []struct {
		in  []byte
		out *[]api.ValueType
	}{{imp.Params, &params}, {imp.Results, &results}} {
		for _, t := range list.in {
			switch t {
			case api.ValueTypeI32, api.ValueTypeI64, api.ValueTypeF32, api.ValueTypeF64, api.ValueTypeExternref:
				*list.out = append(*list.out, t)
			default:
				return nil, nil, fmt.Errorf("import %s.%s has a value of type 0x%02x", imp.Module, imp.Name, t)
			}
		}
	}
	return params, results, nil
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
