package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// Tool runtimes (Config.Runtimes; docs/loop.md, "Tool runtimes"). Some tools need
// something ready before the model may call them: a Wasm plugin's instance warmed and
// initialised for the session, an MCP server started and connected. A Runtime names
// such a thing and the tools that need it; in the preparing state, before the first
// model call, the loop prepares every runtime one of whose tools the run offers, in
// Config order, one at a time, giving it the run's init data for it
// (RunInput.RuntimeInit[name]) and the run's CallInfo and hints (RuntimeHints) on the
// context. The hints reach every tool call (RuntimeHints of its context) and context
// strategy (ContextInput.Hints) of the run as well.
// Each is reported by a runtime event. A runtime that fails to prepare does not fail
// the run: its tools are unavailable for this run, and a call of one is a failed call
// (no tool runs; the error result names the runtime and why), which a declared
// fallback may stand in for. Tools off, or none of its tools offered: not prepared.

// EventRuntime reports one runtime's preparation.
const EventRuntime EventType = "runtime"

// Runtime is what some tools need ready before a run's loop starts.
type Runtime struct {
	Name    string   // the plugin's or server's name; RunInput.RuntimeInit's key
	Tools   []string // the tools, as the model sees them, that need it
	Prepare func(ctx context.Context, init json.RawMessage) error
}

// RuntimeData is the payload of EventRuntime: the runtime, whether it is ready, how long
// preparing it took and, when not ready, why.
type RuntimeData struct {
	Name       string `json:"name"`
	Ready      bool   `json:"ready"`
	DurationMS int64  `json:"duration_ms"`
	Error      string `json:"error,omitempty"`
}

// prepareRuntimes prepares the runtimes the run's offered tools need; each failure is
// kept, by tool, for admit to refuse that tool's calls with.
func (r *run) prepareRuntimes() {
	for _, rt := range r.cfg.Runtimes {
		if !slices.ContainsFunc(r.offered, func(s ToolSpec) bool { return slices.Contains(rt.Tools, s.Name) }) {
			continue
		}
		start := r.cfg.Driver.Now()
		err := safePrepare(r.work, rt, r.in.RuntimeInit[rt.Name])
		d := &RuntimeData{Name: rt.Name, Ready: err == nil, DurationMS: r.cfg.Driver.Now().Sub(start).Milliseconds()}
		if err != nil {
			d.Error = err.Error()
			if r.downTools == nil {
				r.downTools = map[string]string{}
			}
			for _, t := range rt.Tools {
				r.downTools[t] = fmt.Sprintf("Error: tool '%s' is unavailable in this run: its runtime '%s' could not be prepared: %v", t, rt.Name, err)
			}
		}
		r.journal.emit(EventRuntime, d)
	}
}

// safePrepare is rt.Prepare with a panic made an error.
func safePrepare(ctx context.Context, rt Runtime, init json.RawMessage) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panicked: %v", p)
		}
	}()
	return rt.Prepare(ctx, init)
}

type hintsKey struct{}

// RuntimeHints are the hints of the run (RunInput.RuntimeHints) on a context the loop
// gave a tool, a runtime's Prepare, a hook or a strategy; nil when it has none. Shared:
// read them, do not change them.
func RuntimeHints(ctx context.Context) map[string]string {
	h, _ := ctx.Value(hintsKey{}).(map[string]string)
	return h
}
