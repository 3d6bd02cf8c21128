package host

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
	"github.com/agenthost/agenthost/mcpclient"
	"github.com/agenthost/agenthost/sandbox"
	"github.com/agenthost/agenthost/telemetry"
)

// sandboxConfig maps a manifest plugin onto the sandbox's configuration.
func sandboxConfig(p manifest.PluginConfig, services sandbox.Host) sandbox.Config {
	cfg := sandbox.Config{
		Name: p.Name, Path: p.Wasm, SHA256: p.SHA256, ABI: p.ABI, Args: p.Args, PoolSize: p.PoolSize, Host: services, Preinit: preinitMode(p.Preinit),
		Permissions: sandbox.Permissions{
			Memory: uint64(p.Permissions.Memory), Timeout: time.Duration(p.Permissions.Timeout),
			MaxInput: int64(p.Permissions.MaxInput), MaxOutput: int64(p.Permissions.MaxOutput),
			AllowedHosts: p.Permissions.AllowedHosts, AllowedPaths: p.Permissions.AllowedPaths,
			Env: p.Permissions.Env, Config: p.Permissions.Config, Model: p.Permissions.Model, KV: p.Permissions.KV,
			Isolation: p.Permissions.Isolation,
		},
	}
	for _, t := range p.Tools {
		cfg.Tools = append(cfg.Tools, sandbox.ToolDecl{Name: t.Name, Export: t.Export, Description: t.Description,
			Input: t.Input, InputSchema: json.RawMessage(t.InputSchema), Args: t.Args})
	}
	return cfg
}

// preinitMode is a manifest's preinit: pre-initialised when the module passes every
// check unless it says (true: required, false: never).
func preinitMode(preinit *bool) sandbox.PreinitMode {
	switch {
	case preinit == nil:
		return sandbox.PreinitIfSafe
	case *preinit:
		return sandbox.PreinitOn
	default:
		return sandbox.PreinitOff
	}
}

// pluginTool is one tool of a sandbox plugin, as the loop sees it. name is what the
// model calls it (namespaced on a collision); tool is the plugin's own name for it.
type pluginTool struct {
	plugin  *sandbox.Plugin
	name    string
	tool    string
	spec    sandbox.ToolSpec
	cache   *loop.CachePolicy                              // the manifest's cache table's, or nil: never cached (toolcache.go)
	secrets func(context.Context) (context.Context, error) // per-user secrets (usersecrets.go)
}

func (t *pluginTool) Spec() loop.ToolSpec {
	return loop.ToolSpec{Name: t.name, Description: t.spec.Description, InputSchema: t.spec.InputSchema,
		Annotations: map[string]string{"plugin": t.plugin.Name()}}
}

// Call runs the tool in the sandbox. A plugin's failure (trap, timeout, limit) is an
// error result from the sandbox already; an error here means the call could not be made.
//
// The call's session (loop.CallInfo) keys the plugin's instances: with isolation
// "session" (the default) a session never sees an instance another one used.
func (t *pluginTool) Call(ctx context.Context, c loop.ToolCall) (out loop.ToolResult, err error) {
	ctx, end := telemetry.ToolSpan(ctx, t.name, t.plugin.Name(), c.Arguments)
	defer func() { end(out, err) }()
	ctx, out, stop, err := t.withSecrets(ctx)
	if stop {
		return out, err
	}
	res, err := t.plugin.InvokeTool(withCallMeta(withSession(ctx), c), t.tool, []byte(c.Arguments))
	if err != nil {
		return loop.ToolResult{}, err
	}
	// A plugin ends the run as a Go done tool does: _meta {"agenthost/final": true}.
	out = loop.ToolResult{IsError: res.IsError, Structured: res.StructuredContent, Done: res.EndsRun()}
	if out.Done {
		out.Final = res.Text()
	}
	for _, c := range res.Content {
		out.Content = append(out.Content, pluginPart(c))
	}
	if len(out.Content) == 0 && len(out.Structured) > 0 {
		// A result that is only structuredContent reaches the model as its JSON text
		// (what MCP asks servers to send alongside it), not as an empty tool message.
		out.Content = []loop.Part{loop.TextPart(string(out.Structured))}
	}
	return out, nil
}

// ownedTool is a tool of a plugin or of an MCP server, under the name the model sees.
type ownedTool interface {
	loop.Tool
	owner() string   // the plugin's or server's manifest name
	ownName() string // the tool's own name
	modelName() string
}

func (t *pluginTool) owner() string     { return t.plugin.Name() }
func (t *pluginTool) ownName() string   { return t.tool }
func (t *pluginTool) modelName() string { return t.name }

// withSteady puts the host's steady warnings before the ones namespaceTools found.
// toolSet is every tool the model is offered, by the name it sees: the plugins' and the
// MCP servers' (namespaced where two share a name), the A2A agents', the servers'
// resource tools and the embedding program's Go tools (Options.Tools), with the warnings
// of loading them.
func (h *Host) toolSet() ([]loop.Tool, []string, error) {
	tools, warnings := h.withSteady(h.withUserSecrets(namespaceTools(h.toolPlugins(), h.mcpServers)))
	if err := h.applyCachePolicies(tools); err != nil {
		return nil, nil, err
	}
	tools = append(tools, h.a2aTools()...)
	tools = append(tools, h.mcpResourceTools()...)
	seen := make(map[string]bool, len(tools))
	for _, t := range tools {
		seen[t.Spec().Name] = true
	}
	for _, t := range h.opts.Tools {
		name := t.Spec().Name
		if seen[name] {
			return nil, nil, fmt.Errorf("Options.Tools: a tool named %q is already offered (a plugin's, an MCP server's or another Go tool's)", name)
		}
		seen[name] = true
		tools = append(tools, goTool{t})
	}
	return h.replayed(tools), warnings, nil
}

// GoToolOwner is the owner `plugins list` and ToolList name for the embedding program's
// Go tools (Options.Tools).
const GoToolOwner = "go"

// goTool is one of Options.Tools, owned by the program (GoToolOwner).
type goTool struct{ loop.Tool }

func (goTool) owner() string       { return GoToolOwner }
func (t goTool) ownName() string   { return t.Spec().Name }
func (t goTool) modelName() string { return t.Spec().Name }

func (h *Host) withSteady(tools []loop.Tool, warnings []string) ([]loop.Tool, []string) {
	return tools, append(slices.Clone(h.steady), warnings...)
}

// namespaceTools names every tool of the tool plugins and MCP servers: its own name, or
// "owner__tool" where two of them offer the same name. (Not "owner.tool":
// OpenAI-compatible APIs accept only [a-zA-Z0-9_-] in function names.) Each collision
// is also a warning, since the model sees names the author did not write.
func namespaceTools(plugins []*sandbox.Plugin, servers []*mcpclient.Server) (tools []loop.Tool, warnings []string) {
	type entry struct {
		owner, tool string
		make        func(name string) loop.Tool
	}
	var entries []entry
	for _, p := range plugins {
		for _, s := range p.Tools() {
			entries = append(entries, entry{p.Name(), s.Name, func(name string) loop.Tool {
				return &pluginTool{plugin: p, name: name, tool: s.Name, spec: s}
			}})
		}
	}
	for _, srv := range servers {
		for _, t := range srv.Tools() {
			entries = append(entries, entry{srv.Name(), t.Name, func(name string) loop.Tool {
				return &mcpTool{server: srv, name: name, tool: t}
			}})
		}
	}
	count := map[string][]string{}
	for _, e := range entries {
		count[e.tool] = append(count[e.tool], e.owner)
	}
	for _, e := range entries {
		name := e.tool
		if owners := count[name]; len(owners) > 1 {
			name = e.owner + "__" + e.tool
			if owners[0] == e.owner {
				warnings = append(warnings, fmt.Sprintf("tool %q is offered by %s: the model sees it as %s",
					e.tool, strings.Join(owners, ", "), strings.Join(prefixed(owners, e.tool), ", ")))
			}
		}
		tools = append(tools, e.make(name))
	}
	return tools, warnings
}

func prefixed(owners []string, tool string) []string {
	out := make([]string, len(owners))
	for i, p := range owners {
		out[i] = p + "__" + tool
	}
	return out
}

// ModelToolNames maps each plugin's and MCP server's tools to the names the model sees
// (namespaced on a collision), for `plugins list`.
func (h *Host) ModelToolNames() map[string][]string {
	h.toolsMu.RLock()
	defer h.toolsMu.RUnlock()
	out := map[string][]string{}
	for _, t := range h.tools {
		ot := t.(ownedTool)
		out[ot.owner()] = append(out[ot.owner()], ot.modelName())
	}
	return out
}

// withSession keys the plugin's instances by the loop's session (loop.CallInfo, which
// the loop puts on the context of tool calls and of the whole run, hooks included), so
// with isolation "session" no session sees an instance another one used.
func withSession(ctx context.Context) context.Context {
	if info, ok := loop.CallInfoFrom(ctx); ok {
		return sandbox.WithSession(ctx, info.SessionID)
	}
	return ctx
}

// callHook calls a hook export with in as JSON and decodes its answer into out.
func callHook(ctx context.Context, p *sandbox.Plugin, export string, in, out any) (err error) {
	ctx, end := telemetry.HookSpan(ctx, hookKinds[export], p.Name(), export)
	defer func() { end(err) }()
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	res, err := p.CallExport(withSession(ctx), export, b)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(res, out); err != nil {
		return fmt.Errorf("plugin %q: %s returned invalid JSON: %w", p.Name(), export, err)
	}
	return nil
}

// hookKinds names the plugin kind of each hook export, for its span.
var hookKinds = map[string]string{"context_build": "context", "on_step": "termination", "before_final": "termination",
	"guard": "guardrail", "permit": "permission", "plan": "planner", "evaluate": "evaluator", "grade": "evaluator",
	"extract": "memory", "rank": "memory"}

// wasmPlanner is a planner plugin (export plan); wasmEvaluator an evaluator plugin
// (export evaluate). Plan mode (loop/plan.go) calls them.
type (
	wasmPlanner   struct{ p *sandbox.Plugin }
	wasmEvaluator struct{ p *sandbox.Plugin }
)

func (w wasmPlanner) Plan(ctx context.Context, in loop.PlanInput) (loop.Plan, error) {
	var out loop.Plan
	err := callHook(ctx, w.p, "plan", in, &out)
	return out, err
}

func (w wasmEvaluator) Evaluate(ctx context.Context, in loop.EvalInput) (loop.Evaluation, error) {
	var out loop.Evaluation
	err := callHook(ctx, w.p, "evaluate", in, &out)
	return out, err
}

// wasmContext is a context strategy plugin (export context_build).
type wasmContext struct{ p *sandbox.Plugin }

func (w wasmContext) Name() string { return w.p.Name() }
func (w wasmContext) Build(ctx context.Context, in loop.ContextInput) (loop.ContextOutput, error) {
	var out loop.ContextOutput
	err := callHook(ctx, w.p, "context_build", in, &out)
	return out, err
}

// wasmTermination is a termination hook plugin (exports on_step, before_final). A
// missing export means no opinion at that point.
type wasmTermination struct {
	p               *sandbox.Plugin
	onStep, onFinal bool
}

func (w wasmTermination) Name() string { return w.p.Name() }
func (w wasmTermination) OnStep(ctx context.Context, s loop.StepInfo) (loop.Decision, error) {
	var d loop.Decision
	if !w.onStep {
		return d, nil
	}
	err := callHook(ctx, w.p, "on_step", s, &d)
	return d, err
}
func (w wasmTermination) BeforeFinal(ctx context.Context, f loop.FinalInfo) (loop.Decision, error) {
	var d loop.Decision
	if !w.onFinal {
		return d, nil
	}
	err := callHook(ctx, w.p, "before_final", f, &d)
	return d, err
}

// wasmGuardrail is a guardrail plugin (export guard).
type wasmGuardrail struct{ p *sandbox.Plugin }

func (w wasmGuardrail) Name() string { return w.p.Name() }
func (w wasmGuardrail) Check(ctx context.Context, in loop.GuardInput) (loop.GuardResult, error) {
	var r loop.GuardResult
	err := callHook(ctx, w.p, "guard", in, &r)
	if err == nil && r.Action == "" {
		r.Action = loop.GuardAllow
	}
	return r, err
}

// permitInput is what a permission plugin's permit export receives.
type permitInput struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	CallID    string          `json:"call_id"`
	SessionID string          `json:"session_id"`
	RunID     string          `json:"run_id"`
}

type permitResult struct {
	Decision loop.PermissionVerdict `json:"decision"`
	Reason   string                 `json:"reason"`
}

// wasmPermission asks the permission plugins (kind "permission", export permit), in
// manifest order, about a tool call: the first deny wins, any ask asks a human, and
// only when all allow is the call allowed. A plugin that fails (traps, times out,
// answers garbage or an unknown decision) denies: a permission check fails closed.
func wasmPermission(ps []*sandbox.Plugin) loop.PermissionFunc {
	return func(ctx context.Context, c loop.ToolCall) loop.PermissionDecision {
		in := permitInput{Tool: c.Name, CallID: c.ID, Arguments: json.RawMessage(c.Arguments)}
		if !json.Valid(in.Arguments) {
			in.Arguments, _ = json.Marshal(map[string]string{"_raw": c.Arguments})
		}
		if info, ok := loop.CallInfoFrom(ctx); ok {
			in.SessionID, in.RunID = info.SessionID, info.RunID
		}
		verdict := loop.PermitAllow
		for _, p := range ps {
			var out permitResult
			err := callHook(ctx, p, "permit", in, &out)
			switch {
			case err != nil:
				return loop.PermissionDecision{Verdict: loop.PermitDeny,
					Reason: fmt.Sprintf("permission plugin %q failed: %v", p.Name(), err)}
			case out.Decision == loop.PermitDeny:
				return loop.PermissionDecision{Verdict: loop.PermitDeny, Reason: cmp.Or(out.Reason, "denied by permission plugin "+p.Name())}
			case out.Decision == loop.PermitAsk:
				verdict = loop.PermitAsk
			case out.Decision != loop.PermitAllow:
				return loop.PermissionDecision{Verdict: loop.PermitDeny,
					Reason: fmt.Sprintf("permission plugin %q answered an unknown decision %q", p.Name(), out.Decision)}
			}
		}
		return loop.PermissionDecision{Verdict: verdict}
	}
}

func hasExport(p *sandbox.Plugin, name string) bool {
	for _, e := range p.Exports() {
		if e == name {
			return true
		}
	}
	return false
}

// services is what plugins call back into: the session store's KV, the host model
// (create_message) and notifications.
type services struct {
	store  loop.SessionStore
	sample func(ctx context.Context, caller string, req json.RawMessage) (json.RawMessage, error) // Door.Sample
	// noModel: the host runs no model (Options.NoProvider), so a call's client may sample (client.go).
	noModel  bool
	onReport func(any)

	dirtyMu sync.Mutex
	dirty   map[string]bool // plugins whose tool list changed (reports.go)
}

func (s *services) KVGet(ctx context.Context, plugin, key string) ([]byte, bool, error) {
	v, ok, err := s.store.KVGet(ctx, plugin, key)
	if ok && len(v) == 0 {
		ok = false // an empty value reads like an absent key (sandbox contract)
	}
	return v, ok, err
}

func (s *services) KVSet(ctx context.Context, plugin, key string, val []byte) error {
	return s.store.KVSet(ctx, plugin, key, val)
}

func (s *services) KVDelete(ctx context.Context, plugin, key string) error {
	if d, ok := s.store.(interface {
		KVDelete(context.Context, string, string) error
	}); ok {
		return d.KVDelete(ctx, plugin, key)
	}
	return s.store.KVSet(ctx, plugin, key, nil)
}

// namedCompile announces an OCI plugin by its name and reference ("calc
// (oci://registry/calc:1)"), not by its cached blob's file name (a digest); a file
// plugin keeps its file name ("calc.wasm").
func namedCompile(m *manifest.Manifest, onCompile func(string)) func(string) {
	if onCompile == nil {
		return nil
	}
	byBlob := map[string]string{}
	for _, p := range m.Plugins {
		if p.Source != "" && p.Source != p.Wasm {
			byBlob[filepath.Base(p.Wasm)] = p.Name + " (" + p.Source + ")"
		}
	}
	return func(file string) {
		if named, ok := byBlob[file]; ok {
			file = named
		}
		onCompile(file)
	}
}
