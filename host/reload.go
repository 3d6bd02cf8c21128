package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/sandbox"
)

// A plugin author rebuilds a .wasm and wants the running host to use it, without
// restarting `serve` (and losing its clients) or retyping a prompt. Reload compares each
// plugin file with what was loaded, loads the changed ones (the runtime compiles them
// anew: its cache is keyed by content), and builds a new loop.Agent from the plugins.
// Runs that already started finish on the old agent and the old plugins; new runs get
// the new ones; the old plugins are closed once their agent has no run left. A file that
// does not load (half written, broken, or no longer matching its sha256 pin) leaves
// everything as it was.

// fileStamp tells whether a file changed since it was loaded.
type fileStamp struct {
	mod  time.Time
	size int64
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size()}
}

// loadPlugin loads the manifest's plugin i, refusing a tool plugin with no tools.
func (h *Host) loadPlugin(ctx context.Context, i int) (*sandbox.Plugin, error) {
	m := h.Manifest
	p := m.Plugins[i]
	key := fmt.Sprintf("plugins.%d", i)
	// A sha256 pin is checked by the sandbox, on the bytes it compiles (sandboxConfig).
	_, end := h.tel.Span(ctx, "sandbox.load "+p.Name, attribute.String("agenthost.plugin", p.Name),
		attribute.String("agenthost.plugin.wasm", p.Wasm))
	cfg := sandboxConfig(p, h.services)
	if err := configureJS(&cfg, p); err != nil { // jsplugin.go
		end(err)
		return nil, m.ErrorAt(key+".js", "%v", err)
	}
	pl, err := h.runtime.Load(ctx, cfg)
	end(err)
	if err != nil {
		return nil, m.ErrorAt(key, "%v", err)
	}
	if p.Kind == "tool" && len(pl.Tools()) == 0 {
		pl.Close(ctx)
		return nil, m.ErrorAt(key, "%v", noToolsError(pl))
	}
	return pl, nil
}

func (h *Host) toolPlugins() []*sandbox.Plugin {
	var out []*sandbox.Plugin
	for i, p := range h.plugins {
		if h.Manifest.Plugins[i].Kind == "tool" {
			out = append(out, p)
		}
	}
	return out
}

// Reload loads the plugins whose files changed since they were loaded and, if any did,
// swaps in an agent built from them. It returns the names of the reloaded plugins. On
// error nothing changes. Reload needs a host opened with a provider.
func (h *Host) Reload(ctx context.Context) (reloaded []string, err error) {
	h.live.mu.Lock()
	defer h.live.mu.Unlock()
	h.live.reap()
	if h.model == nil {
		return nil, errors.New("reload: the host has no provider")
	}
	next := append([]*sandbox.Plugin(nil), h.plugins...)
	stamps := append([]fileStamp(nil), h.stamps...)
	var fresh, old []*sandbox.Plugin
	defer func() {
		if err != nil {
			for _, p := range fresh {
				p.Close(context.WithoutCancel(ctx))
			}
		}
	}()
	for i, p := range h.Manifest.Plugins {
		st := stampOf(pluginFile(p))
		if st == h.stamps[i] {
			continue
		}
		pl, err := h.loadPlugin(ctx, i)
		if err != nil {
			return nil, err
		}
		fresh = append(fresh, pl)
		old = append(old, next[i])
		next[i], stamps[i] = pl, st
		reloaded = append(reloaded, p.Name)
	}
	if len(reloaded) == 0 {
		return nil, nil
	}
	h.toolsMu.Lock()
	defer h.toolsMu.Unlock()
	prevPlugins, prevTools, prevWarnings := h.plugins, h.tools, h.Warnings
	h.plugins = next
	tools, warnings, err := h.toolSet()
	var agent *loop.Agent
	if err == nil {
		h.tools, h.Warnings = tools, warnings
		agent, err = h.newAgent(h.model, h.modelName, h.approver)
	}
	if err != nil {
		h.plugins, h.tools, h.Warnings = prevPlugins, prevTools, prevWarnings
		return nil, err
	}
	h.stamps = stamps
	h.live.retired = append(h.live.retired, retiredAgent{gen: h.live.cur.Load(), plugins: old})
	h.Agent = agent
	h.live.cur.Store(&generation{agent: agent, plugins: next})
	h.live.reap()
	_ = h.auditConfig(ctx, "reload") // the reload happened; a failed record does not undo it
	return reloaded, nil
}

// Watch reloads changed plugins until ctx ends (NextReload in a loop), reporting each
// outcome to logf.
func (h *Host) Watch(ctx context.Context, interval time.Duration, logf func(format string, args ...any)) {
	for ctx.Err() == nil {
		names, err := h.NextReload(ctx, interval)
		switch {
		case err != nil && ctx.Err() == nil:
			logf("watch: kept the running plugins: %v", err)
		case len(names) > 0:
			logf("watch: reloaded %v", names)
		}
	}
}

// NextReload polls the plugin files every interval and returns after the first Reload
// that changed something or failed, or when ctx ends. A file is reloaded once it has
// stopped changing for one interval, so a build caught half-way is not loaded; one that
// failed to load is tried again only when it changes again.
func (h *Host) NextReload(ctx context.Context, interval time.Duration) ([]string, error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var seen []fileStamp
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
		now := make([]fileStamp, len(h.Manifest.Plugins))
		for i, p := range h.Manifest.Plugins {
			now[i] = stampOf(pluginFile(p))
		}
		settled := seen != nil && equalStamps(now, seen) && !equalStamps(now, h.live.failed)
		seen = now
		if !settled {
			continue
		}
		names, err := h.Reload(ctx)
		if err != nil {
			h.live.failed = now
			return nil, err
		}
		if len(names) > 0 {
			return names, nil
		}
	}
}

func equalStamps(a, b []fileStamp) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// liveAgent is the agent new runs start on, and the ones runs may still be using.
type liveAgent struct {
	cur     atomic.Pointer[generation]
	mu      sync.Mutex // serialises Reload
	retired []retiredAgent
	failed  []fileStamp // the files as they were when a Reload last failed (NextReload)
}

// generation is one agent and the plugin set it was built from: what a run (and its
// memory extraction afterwards) uses from start to end, whatever a Reload swaps in
// meanwhile.
type generation struct {
	agent   *loop.Agent
	plugins []*sandbox.Plugin
	held    atomic.Int64 // door entries in flight on it (hold)
}

type retiredAgent struct {
	gen     *generation
	plugins []*sandbox.Plugin // the plugins it had that the current generation does not
}

// agent is the agent new runs start on, or nil on a host without a provider.
func (l *liveAgent) agent() *loop.Agent {
	if g := l.cur.Load(); g != nil {
		return g.agent
	}
	return nil
}

// hold takes the current generation for one door entry, or nil on a host without a
// provider; release gives it back. A generation retired between the load and the count
// is let go and the new one taken, so reap never closes a plugin an entry holds.
func (l *liveAgent) hold() *generation {
	for {
		g := l.cur.Load()
		if g == nil {
			return nil
		}
		g.held.Add(1)
		if l.cur.Load() == g {
			return g
		}
		g.held.Add(-1)
	}
}

func (l *liveAgent) release(g *generation) {
	if g.held.Add(-1) == 0 && l.cur.Load() != g {
		// The last entry on a retired generation: its plugins are closed now, not at
		// the next Reload (which may never come). Off the caller's path: a Reload in
		// progress holds mu while it compiles.
		go func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.reap()
		}()
	}
}

// reap closes the plugins of retired generations no entry holds and no run uses.
// Caller holds mu.
func (l *liveAgent) reap() {
	kept := l.retired[:0]
	for _, r := range l.retired {
		if r.gen.held.Load() > 0 || r.gen.agent.Running() > 0 {
			kept = append(kept, r)
			continue
		}
		for _, p := range r.plugins {
			p.Close(context.Background())
		}
	}
	l.retired = kept
}

// Runner is the host's door for a caller that speaks loop.RunInput (`agenthost serve`'s
// HTTP, AG-UI and A2A routes, cluster workers, eval): each run goes through Door.Run for
// the principal on its context (access.WithPrincipal), or the local user it names.
func (h *Host) Runner() *Runner { return &Runner{h: h} }

// Runner runs through the host's door; see Host.Runner.
type Runner struct{ h *Host }

// RunWith is Door.Run for the principal on ctx, or the local user in.User names.
func (r *Runner) RunWith(ctx context.Context, in loop.RunInput, emit func(loop.Event)) (loop.RunResult, error) {
	return r.h.Door().Run(ctx, r.h.principalOf(ctx, in.User), in, emit)
}

// Abort aborts the session's run of that id on the agent running it.
func (r *Runner) Abort(sessionID, runID string) bool {
	if a := r.h.live.agent(); a != nil && a.Abort(sessionID, runID) {
		return true
	}
	r.h.live.mu.Lock()
	defer r.h.live.mu.Unlock()
	for _, old := range r.h.live.retired {
		if old.gen.agent.Abort(sessionID, runID) {
			return true
		}
	}
	return false
}
