package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/agenthost/agenthost/sandbox/internal/wasmbin"
)

// Plugin is a loaded plugin: one compiled module and a pool of instances.
// Its methods are safe for concurrent use.
type Plugin struct {
	name     string
	digest   string // sha256 of the module as read, hex
	abi      abi    // the tool ABI, chosen once at load (abi.go)
	perms    Permissions
	hosts    hostPolicy
	hostImpl Host
	exports  map[string]bool
	exportsL []string
	toolsMu  sync.RWMutex // tools change when an mcp plugin's list does (RefreshTools)
	tools    []ToolSpec
	args     []string

	// the ABIs run on Extism (mcp, extism, and hooks: extismEngine, abi.go)
	compiled     *extism.CompiledPlugin
	moduleConfig wazero.ModuleConfig
	pool         *pool
	memories     *memoryPool // linear memories of disposed instances (memory.go)

	roots []*os.Root // the allowed_paths mounts, closed with the plugin

	preinitNot error // why the module is served as built, nil when pre-initialised (preinit.go)

	closed atomic.Bool
}

// dataSegmentGap is the longest run of zeros written out to join two data
// segments (internal/wasmbin): Go leaves gaps of up to 63 bytes, and
// copying 256 zeros costs wazero less than evaluating one more segment.
const dataSegmentGap = 256

// Digest is the sha256 (hex) of the module the plugin was loaded from, as read: what a
// manifest's sha256 pin is checked against, and what the audit log records.
func (p *Plugin) Digest() string { return p.digest }

// Load compiles (or fetches from the cache) and prepares a plugin. For the
// mcp ABI it also asks the plugin for its tools, so a broken plugin fails
// here rather than at its first call.
func (r *Runtime) Load(ctx context.Context, cfg Config) (*Plugin, error) {
	p, err := r.load(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("load plugin %q: %w", cfg.Name, err)
	}
	return p, nil
}

func (r *Runtime) load(ctx context.Context, cfg Config) (*Plugin, error) {
	wasm, err := moduleBytes(cfg)
	if err != nil {
		return nil, err
	}
	perms := cfg.Permissions.withDefaults()
	if err := perms.validate(); err != nil {
		return nil, err
	}
	info, err := parseModuleInfo(wasm)
	if err != nil {
		return nil, err
	}
	if info.minPages > perms.memoryPages() {
		return nil, fmt.Errorf("memory limit %s exceeded: the module starts with %s",
			formatSize(int64(perms.Memory)), formatSize(int64(info.minPages)*pageSize))
	}
	hosts, err := newHostPolicy(perms.AllowedHosts)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(wasm)
	p := &Plugin{
		name:     cfg.Name,
		digest:   hex.EncodeToString(sum[:]),
		perms:    perms,
		hosts:    hosts,
		hostImpl: cfg.Host,
		exports:  info.exportSet(),
		exportsL: info.exports,
		args:     cfg.Args,
	}
	if p.abi, err = chooseABI(p, cfg.ABI, info); err != nil {
		return nil, err
	}
	// What is compiled is the module with its data segments merged: the same
	// initial memory from a few segments instead of a Go program's tens of
	// thousands, each of which every instantiation would evaluate.
	wasm, _, _ = wasmbin.MergeData(wasm, dataSegmentGap)
	env, err := p.configureModule()
	if err != nil {
		return nil, err
	}
	if wasm, err = r.preinit(ctx, cfg.Preinit, p, wasm, env); err != nil { // preinit.go
		_ = p.Close(ctx)
		return nil, err
	}
	size := cfg.PoolSize
	if size <= 0 {
		size = defaultPoolSize(wasm)
	}
	// Room for the memories of as many instances as may exist at once: the
	// guest's and the Extism kernel's of each.
	p.memories = newMemoryPool(2 * size)
	file := cfg.Name
	if cfg.Path != "" {
		file = filepath.Base(cfg.Path)
	}
	compiledSum := sha256.Sum256(wasm)
	spec := loadSpec{r: r, wasm: wasm, sum: compiledSum, decls: cfg.Tools, size: size, compiled: r.beforeCompile(compiledSum, file)}
	if err := p.abi.load(ctx, spec); err != nil {
		_ = p.Close(ctx)
		return nil, err
	}
	return p, nil
}

// moduleBytes is the module of cfg, read once if it is a path, and checked against its
// sha256 pin.
func moduleBytes(cfg Config) ([]byte, error) {
	wasm, source := cfg.Wasm, "the module bytes"
	if len(wasm) == 0 {
		if cfg.Path == "" {
			return nil, fmt.Errorf("no wasm bytes and no path")
		}
		b, err := readModule(cfg.Path) // once: what is hashed is what is compiled (module.go)
		if err != nil {
			return nil, err
		}
		wasm, source = b, cfg.Path
	}
	if cfg.SHA256 != "" {
		if err := checkDigest(wasm, cfg.SHA256, source); err != nil {
			return nil, err
		}
	}
	return wasm, nil
}

// configureModule makes the module configuration every instance starts from: the
// granted environment variables, read now (and returned: pre-initialisation runs with
// them), and the mounts, opened now.
func (p *Plugin) configureModule() (map[string]string, error) {
	env := make(map[string]string, len(p.perms.Env))
	for _, name := range p.perms.Env {
		if v, ok := os.LookupEnv(name); ok {
			env[name] = v
		}
	}
	fs, roots, err := fsConfig(p.perms.AllowedPaths)
	if err != nil {
		return nil, err
	}
	p.roots = roots
	p.moduleConfig = moduleConfig(p.perms, env, fs)
	return env, nil
}

// Name is the plugin's name from its Config.
func (p *Plugin) Name() string { return p.name }

// ABI is "mcp", "extism" or "wasi".
func (p *Plugin) ABI() string { return p.abi.name() }

// Tools lists the plugin's tools.
func (p *Plugin) Tools() []ToolSpec {
	p.toolsMu.RLock()
	defer p.toolsMu.RUnlock()
	return slices.Clone(p.tools)
}

// Exports lists the functions the module exports, in module order.
func (p *Plugin) Exports() []string { return slices.Clone(p.exportsL) }

// CallExport calls an export with raw input and returns its raw output, with
// every limit of a tool call. It is how hooks (context_build, on_step,
// before_final, guard) are called. A plugin failure is a *Fault.
func (p *Plugin) CallExport(ctx context.Context, export string, input []byte) ([]byte, error) {
	return p.abi.callExport(ctx, export, input)
}

// ForgetSession closes the idle instances kept for session id (isolation "session")
// and clears their memories: the host calls it when it deletes the session. Instances
// other isolations keep are not the session's alone ("pooled") or not kept ("call").
// It reports how many instances it closed.
func (p *Plugin) ForgetSession(ctx context.Context, id string) int {
	if p.pool == nil {
		return 0
	}
	return p.pool.forget(ctx, id)
}

// Close disposes of every instance. Calls in progress finish first only if
// they hold no instance yet; the rest end with an error.
func (p *Plugin) Close(ctx context.Context) error {
	if p.closed.Swap(true) {
		return nil
	}
	if p.pool != nil {
		p.pool.close(ctx)
	}
	p.memories.drain()
	defer func() {
		for _, r := range p.roots {
			r.Close()
		}
	}()
	return p.abi.close(ctx)
}

// clipGuestError bounds a plugin's own error message (error_set) by its
// max_output: the message is output the plugin chose, and it goes on to the
// model and the session as a result would.
func (p *Plugin) clipGuestError(err error) error {
	msg, limit := err.Error(), p.perms.MaxOutput
	if int64(len(msg)) <= limit {
		return err
	}
	return fmt.Errorf("%s… (error message of %s cut at max_output %s)",
		msg[:limit], formatSize(int64(len(msg))), formatSize(limit))
}

// invoke runs one export on a pooled instance under the plugin's limits.
func (p *Plugin) invoke(ctx context.Context, export string, input []byte) ([]byte, error) {
	if p.closed.Load() {
		return nil, errClosed
	}
	if !p.exports[export] {
		return nil, fmt.Errorf("plugin %q has no export %q", p.name, export)
	}
	if int64(len(input)) > p.perms.MaxInput {
		return nil, &Fault{Plugin: p.name, Export: export, Kind: FaultInput,
			Err: fmt.Errorf("input %s exceeds max_input %s", formatSize(int64(len(input))), formatSize(p.perms.MaxInput))}
	}
	// The timeout bounds the whole call, the wait for an instance included:
	// a caller stuck behind spinning calls gets its answer (busy) when its
	// time is up, not when theirs is. An admitted run's call waits as long as
	// its run allows, and the timeout starts when it has its instance
	// (WaitForInstance).
	start := time.Now()
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wait, cancelWait := p.instanceWait(cctx)
	defer cancelWait()
	in, err := p.pool.acquire(wait, sessionOf(ctx))
	if err != nil {
		return nil, p.noInstance(ctx, export, cap(p.pool.slots), start, err)
	}
	timed, cancelTimeout := p.callTimer(wait)
	defer cancelTimeout()
	st := &callState{guard: &netGuard{policy: p.hosts, cancel: cancel}}
	callCtx := context.WithValue(timed, callStateKey{}, st)
	callCtx = httptrace.WithClientTrace(callCtx, st.guard.trace())

	endSleeps := in.clock.serve(callCtx) // a sleeping guest wakes when the call ends
	restore := in.withCallConfig(ctx)
	rc, out, err := in.ext.CallWithContext(callCtx, export, input)
	restore()
	endSleeps()
	in.out.flush(ctx, p, st.droppedNotices())
	if err == nil && rc != 0 {
		err = fmt.Errorf("returned %d without an error message", rc)
	}
	if err == nil && timed.Err() != nil {
		// The call's end cut a sleep or request short and the guest went on
		// to return: what it returned rests on a wait that did not happen.
		err = context.Cause(timed)
	}
	if err != nil {
		defer p.pool.release(ctx, in, false)
		// The guest's own error (error_set) comes back as the call's error;
		// anything else that failed the call is a trap.
		guestErr := err.Error() == in.ext.GetErrorWithContext(context.WithoutCancel(ctx))
		if guestErr {
			err = p.clipGuestError(err)
		}
		return nil, p.classify(ctx, timed, st, in.watch, export, err, guestErr)
	}
	p.pool.release(ctx, in, true)
	if int64(len(out)) > p.perms.MaxOutput {
		return nil, &Fault{Plugin: p.name, Export: export, Kind: FaultOutput,
			Err: fmt.Errorf("output %s exceeds max_output %s", formatSize(int64(len(out))), formatSize(p.perms.MaxOutput))}
	}
	return out, nil
}

// The default bound on a plugin's instances (Config.PoolSize 0): as many as fit in
// defaultPoolMemory of initial linear memory, within [minDefaultPool, maxDefaultPool].
// A busy server makes one instance per new session, and a call's wait for one counts
// against its timeout (busy); on a CPU-starved host the calls holding instances are
// descheduled most of the time they hold them, so the number of instances, not their
// cost alone, decides how long the others wait (BENCHMARKS.md, round four).
const (
	defaultPoolMemory = 64 << 20
	minDefaultPool    = 4
	maxDefaultPool    = 16
)

// defaultPoolSize is the bound for the module as compiled: a pre-initialised Go plugin
// (about 3.3 MiB) gets 16, the JS runtime's (12 MiB) 5, a module it cannot read 4.
func defaultPoolSize(wasm []byte) int {
	info, err := parseModuleInfo(wasm) // the compiled module's: a snapshot's memory is the initialised one
	if err != nil {
		return minDefaultPool
	}
	size := uint64(info.minPages) * pageSize
	return int(min(max(defaultPoolMemory/max(size, 1), minDefaultPool), maxDefaultPool))
}
