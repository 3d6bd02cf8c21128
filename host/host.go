package host

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
	"github.com/agenthost/agenthost/mcpclient"
	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/providers"
	"github.com/agenthost/agenthost/redact"
	"github.com/agenthost/agenthost/sandbox"
	"github.com/agenthost/agenthost/telemetry"
)

// Options say how to open a host. Only Manifest is required.
type Options struct {
	Manifest   string             // path to agent.toml
	Loaded     *manifest.Manifest // or a manifest already decoded (manifest.Parse); Manifest is then ignored
	Provider   string             // overrides agent.provider
	NoProvider bool               // load plugins and the store only (plugins list/call/verify, sessions)
	// NoEmbeddings does not start [memory.embeddings]'s provider: for commands that
	// neither store nor search memories (plugins list, inspect, verify), which must not
	// need that provider's key.
	NoEmbeddings bool
	// StoreOnly opens the store (and memory on it) alone: no plugin is compiled or
	// loaded, no MCP server or provider started, no agent built. For the commands that
	// only read or change what the store holds (users, sessions, audit, memory, store
	// rotate-key): they start in milliseconds, and a manifest whose plugin is missing or
	// broken still lets an admin manage users. Such a host records no config.load in the
	// audit log, since it loaded no configuration to record (auditconfig.go).
	StoreOnly bool
	// Lock is what loading Manifest does with its agent.lock (LockUpdate: record; the
	// CLI's --locked: manifest.LockStrict). Ignored with Loaded.
	Lock manifest.LockMode
	// ConfineExe is the agenthost binary, which confines commands with a sandbox entry
	// (confine); empty: SelfExe.
	ConfineExe string
	Approver   loop.Approver
	CacheDir   string    // Wasm compilation cache; default $AGENTHOST_CACHE_DIR, else .agenthost/cache next to the manifest
	Stderr     io.Writer // provider process logs; nil discards them
	// Telemetry traces runs and counts them (package telemetry). Nil: Open makes one
	// when [telemetry] or the OTEL_EXPORTER_OTLP_* variables ask for traces, or when
	// Metrics asks for metrics, and Close flushes it.
	Telemetry *telemetry.Telemetry
	Metrics   bool // count runs for Host.Telemetry().Handler() (agenthost serve's /metrics)
	// OnReport receives what plugins report (a loop.PluginLogData or loop.ProgressData)
	// outside a run: during `plugins call` or while loading. Inside a run reports are
	// the run's plugin_log and progress events.
	OnReport func(report any)
	// OnCompile is told a plugin's file name before its first compile into the cache
	// (sandbox.RuntimeOptions.OnCompile): the CLI prints a line, since it takes seconds.
	OnCompile func(file string)
	// StoreOutage is how long a run waits for an unavailable PostgreSQL store (a
	// database restarting) before failing, writing again when it answers
	// (loop.Config.StoreOutage, rule L23). 0: no wait. A SQLite store's failures are the
	// local disk's (the file deleted, the disk full): waiting does not bring them back,
	// so its runs fail at once whatever this says.
	StoreOutage time.Duration
	// Tools are Go tools a program that embeds agenthost offers beside the manifest's
	// plugins and MCP servers. They are the agent's tools like any other: offered to the
	// model by their names, and every call takes the loop's one pipeline (schema,
	// guardrails, permission plugin, approvals, caps, storage, audit). A name that a
	// plugin, a server or another tool also uses refuses Open.
	Tools []loop.Tool
	// ReplayTool, when set, answers every tool call in the tool's stead (replaytools.go).
	ReplayTool func(loop.ToolCall) loop.ToolResult
	// Clock, when set, is the clock runs read (loop.Driver's Now; toolcache.go).
	Clock func() time.Time
	// OnSignIn, when set, shows a person at this host's terminal the URL that signs in
	// to MCP server name again for scopes, when the server asks for more scope than the
	// stored token has (step-up, host/mcpdiscover.go); the call waits for the browser to
	// come back, within its timeout. Nil: such a call fails with the server's answer.
	OnSignIn func(name string, scopes []string, authURL string)
}

// storeOutage is Options.StoreOutage for the manifest's store (see there).
func (h *Host) storeOutage() time.Duration {
	if h.Manifest.Store.Kind != "postgres" {
		return 0
	}
	return h.opts.StoreOutage
}

// SelfExe is the agenthost binary when this process is one (cmd/agenthost sets it at
// start): commands with a sandbox entry are started through it (confine). A program
// that embeds the host and is not agenthost leaves it empty, and such commands cannot
// start.
var SelfExe string

// Host is a loaded manifest: store, plugins, provider and the agent wired from them.
type Host struct {
	Manifest *manifest.Manifest
	Agent    *loop.Agent // nil with NoProvider
	// toolAgent is the entry agent built with noModel when NoProvider: the policy Call
	// applies without a provider (pipeline.go).
	toolAgent atomic.Pointer[loop.Agent]
	Store     loop.SessionStore
	memory    memory.Store   // [memory] on: the store's memories (memory.go)
	memSvc    *memoryService // the one door in front of memory (memoryservice.go); nil: none

	// Warnings are problems that do not stop the host (tool names that collide); the CLI
	// prints them.
	Warnings []string
	// steady are the warnings of the host's whole life (a moved tag in agent.lock, a
	// command that runs unconfined), which come first whenever Warnings is remade.
	steady []string

	runtime   *sandbox.Runtime
	plugins   []*sandbox.Plugin   // written by Open and, under toolsMu, by Reload; a run uses its generation's
	toolsMu   sync.RWMutex        // guards tools and Warnings after Open (RefreshTools)
	tools     []loop.Tool         // the tool plugins' tools, named as the model sees them
	providers []*providers.Client // the agent's provider, or its fallback chain
	services  *services

	// For Reload (reload.go): what a rebuilt agent needs, and what was loaded when.
	model     loop.Model
	modelName string
	approver  loop.Approver
	stamps    []fileStamp
	live      liveAgent
	tel       *telemetry.Telemetry
	ownTel    bool // made by Open: Close shuts it down

	mcpServers []*mcpclient.Server

	opts    Options                      // as Open got them
	clients map[string]*providers.Client // started providers, by name (agents share them)

	forgetters forgetters // told of every session the host deletes (erase.go)
	admission  *admission // [admission]; nil admits everything (admission.go)
	refreshes  refreshes  // background refreshes of tool groups' measures (grouprefresh.go)
}

// Telemetry is the host's tracer and meters, or nil.
func (h *Host) Telemetry() *telemetry.Telemetry { return h.tel }

// Open loads the manifest and starts everything it declares. On error, whatever was
// already started is stopped again.
func Open(ctx context.Context, opts Options) (_ *Host, err error) {
	m := opts.Loaded
	if m == nil {
		if m, err = manifest.LoadWith(opts.Manifest, opts.Lock); err != nil {
			return nil, err
		}
	}
	if opts.ConfineExe == "" {
		opts.ConfineExe = SelfExe
	}
	h := &Host{Manifest: m, tel: opts.Telemetry, opts: opts, steady: slices.Clone(m.Warnings),
		admission: newAdmission(m.Admission)}
	defer func() {
		if err != nil {
			h.Close() // h, not the result: a failed Open returns nil
		}
	}()
	if opts.StoreOnly {
		return h, h.openStores(ctx)
	}
	for _, step := range []func(context.Context) error{h.openTelemetry, h.openStores, h.openPlugins, h.openTools} {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	if opts.NoProvider {
		// The agent's policy still applies to the tools called without a model (Call).
		return h, h.buildToolAgent()
	}
	return h, h.startAgent(ctx)
}

// openTelemetry makes the host's telemetry when none was given and [telemetry], the
// OTEL_EXPORTER_OTLP_* variables or Options.Metrics ask for it.
func (h *Host) openTelemetry(ctx context.Context) (err error) {
	m := h.Manifest
	topts := telemetry.Options{Endpoint: m.Telemetry.OTLPEndpoint, Protocol: m.Telemetry.Protocol,
		CaptureContent: m.Telemetry.CaptureContent, Metrics: h.opts.Metrics, Scrub: telemetryScrub(m)}
	if h.tel != nil || !(h.opts.Metrics || telemetry.TracingConfigured(topts)) {
		return nil
	}
	if h.tel, err = telemetry.New(ctx, topts); err != nil {
		return err
	}
	h.ownTel = true
	return nil
}

// openStores opens the session store, the memory store on it and the embeddings
// provider, and the services plugins call back into.
func (h *Host) openStores(ctx context.Context) (err error) {
	if h.Store, err = openStore(ctx, h.Manifest.Store); err != nil {
		return err
	}
	h.openMemory()
	if err := h.openEmbeddings(ctx); err != nil {
		return err
	}
	if h.memory != nil {
		if h.memSvc, err = h.newMemoryService(h.memory); err != nil {
			return err
		}
	}
	h.services = &services{store: h.Store, onReport: h.opts.OnReport}
	h.services.sample, h.services.noModel = h.Door().Sample, h.opts.NoProvider
	return nil
}

// openPlugins starts the Wasm runtime and loads the plugins, all at once
// (sandbox.LoadEach): the error is the first failing one's in manifest order, whichever
// finished first.
func (h *Host) openPlugins(ctx context.Context) (err error) {
	m := h.Manifest
	cache := cmp.Or(h.opts.CacheDir, CacheDirFromEnv(), filepath.Join(m.Dir, ".agenthost", "cache"))
	if h.runtime, err = sandbox.NewRuntime(ctx, sandbox.RuntimeOptions{CacheDir: cache, OnCompile: namedCompile(m, h.opts.OnCompile)}); err != nil {
		return fmt.Errorf("start wasm runtime: %w", err)
	}
	plugins, _, err := sandbox.LoadEach(ctx, len(m.Plugins), h.loadPlugin)
	if err != nil {
		return err
	}
	h.plugins = plugins
	for i := range m.Plugins {
		h.stamps = append(h.stamps, stampOf(pluginFile(m.Plugins[i])))
	}
	return nil
}

// openTools starts the MCP servers and names every tool as the model sees it: the
// plugins', the servers', the A2A agents' and the servers' resources; then checks the
// workflows' tool steps against them and records the configuration in the audit log.
func (h *Host) openTools(ctx context.Context) error {
	if err := h.startMCPServers(ctx, "agenthost"); err != nil {
		return err
	}
	h.steady = append(h.steady, h.confineWarnings()...)
	var err error
	if h.tools, h.Warnings, err = h.toolSet(); err != nil {
		return err
	}
	if err := h.checkWorkflowTools(); err != nil {
		return err
	}
	if err := h.auditConfig(ctx, "host"); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// Plugins lists the loaded plugins in manifest order: the current set (a Reload swaps
// in the next one under toolsMu).
func (h *Host) Plugins() []*sandbox.Plugin {
	h.toolsMu.RLock()
	defer h.toolsMu.RUnlock()
	return h.plugins
}

// Plugin finds a loaded plugin by name.
func (h *Host) Plugin(name string) (*sandbox.Plugin, bool) {
	for _, p := range h.Plugins() {
		if p.Name() == name {
			return p, true
		}
	}
	return nil, false
}

// Sessions lists stored sessions, most recently updated first.
func (h *Host) Sessions(ctx context.Context) ([]loop.SessionInfo, error) {
	return loop.ListSessions(ctx, h.Store)
}

// Close stops the provider, the plugins and the runtime, and closes the store.
func (h *Host) Close() error {
	h.refreshes.close() // before the store they read (grouprefresh.go)
	ctx := context.Background()
	var errs []error
	for _, p := range h.providers {
		errs = append(errs, p.Close())
	}
	for _, p := range h.plugins {
		errs = append(errs, p.Close(ctx))
	}
	for _, s := range h.mcpServers {
		errs = append(errs, s.Close())
	}
	h.live.mu.Lock()
	for _, r := range h.live.retired { // plugins a Reload replaced, still held by a run
		for _, p := range r.plugins {
			errs = append(errs, p.Close(ctx))
		}
	}
	h.live.retired = nil
	h.live.mu.Unlock()
	if h.runtime != nil {
		errs = append(errs, h.runtime.Close(ctx))
	}
	if h.ownTel {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second) // flush the last spans, within a bound
		errs = append(errs, h.tel.Shutdown(sctx))
		cancel()
	}
	if c, ok := h.Store.(io.Closer); ok && c != nil {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// defaultContextWindow is the context window assumed for a model whose [agent] does not
// give one: the size of today's common models. Summarising starts at compact_at of it.
const defaultContextWindow = 128_000

// compactAt is loop.Config.CompactAt for an agent: compact_at (default 0.8) of its
// context window (default 128000 tokens); 0 when compact_at is negative.
func compactAt(a manifest.AgentConfig) int {
	if a.CompactAt < 0 {
		return 0
	}
	return int(cmp.Or(a.CompactAt, 0.8) * float64(cmp.Or(a.ContextWindow, defaultContextWindow)))
}

// telemetryScrub is [redact]'s "telemetry" stage for captured span content, nil without.
func telemetryScrub(m *manifest.Manifest) func(string) string {
	if m.Redact == nil {
		return nil
	}
	r, err := redact.New(*m.Redact) // checked when the manifest loaded
	if err != nil || !r.Has(redact.StageTelemetry) {
		return nil
	}
	return func(s string) string {
		out, _ := r.Redact(s)
		return out
	}
}
