package sandbox

import (
	"context"
	"encoding/json"
	"fmt"

	extism "github.com/extism/go-sdk"
)

// abi is one tool ABI: how a plugin's module is compiled, how its tools are found and
// called, and what else it serves. Load chooses one (chooseABI) and every later step
// goes through it, as wazero has one engine per compiler rather than a test of the
// engine's kind at each step; the Plugin keeps no note of its ABI to branch on. The
// implementations:
//
//	mcpV1      describe + call                                    (abi_mcp.go)
//	mcpV2      list_tools + call_tool, prompts and resources      (abi_mcp.go)
//	extismABI  declared exports; _start of an Extism std command  (abi_extism.go, abi_extism_std.go)
//	wasiABI    a WASI command, run once per call                  (abi_wasi.go)
//
// The first three run on Extism (extismEngine: the compiled plugin and its pool of
// instances, which hooks use too); the wasi ABI on wazero alone.
type abi interface {
	// name is the ABI as agent.toml writes it: "mcp", "extism" or "wasi".
	name() string
	// load compiles the module and finds the plugin's tools: described by the plugin
	// (mcp) or declared and checked against the module (extism, wasi).
	load(ctx context.Context, s loadSpec) error
	// callTool calls one of the plugin's tools (known to exist) with its arguments JSON.
	callTool(ctx context.Context, name string, args []byte) (CallResult, error)
	// callExport calls an export with raw input: a hook.
	callExport(ctx context.Context, export string, input []byte) ([]byte, error)
	// refreshTools asks the plugin for its tools again; a fixed list has nothing to do.
	refreshTools(ctx context.Context) error
	// request serves one of the mcp v2 prompt and resource requests (mcpRequests).
	request(ctx context.Context, export string, params json.RawMessage) (json.RawMessage, error)
	// close releases what load made. It is called once, also after a failed load.
	close(ctx context.Context) error
}

// loadSpec is what an ABI's load works from.
type loadSpec struct {
	r        *Runtime
	wasm     []byte     // the module as compiled (its data segments merged)
	sum      [32]byte   // wasm's sha256
	decls    []ToolDecl // Config.Tools
	size     int        // the bound on instances (Config.PoolSize, defaulted)
	compiled func()     // to call once the module compiled (Runtime.beforeCompile)
}

// chooseABI applies the manifest's choice or guesses from the exports: the mcp exports
// ⇒ mcp (v1 when it has call+describe); a command (_start) that does not import the
// Extism kernel ⇒ wasi; anything else ⇒ extism. It refuses a Go command module for an
// ABI that calls exports, unless it is an Extism std command.
func chooseABI(p *Plugin, declared string, info moduleInfo) (abi, error) {
	a, err := pickABI(p, declared, info)
	if err != nil {
		return nil, err
	}
	if info.goBuilt && p.exports["_start"] && callsExports(a) {
		// A Go command module's exports trap until main has run; Extism never runs it.
		return nil, fmt.Errorf("this Go module is a command (it exports _start), so its exports cannot be called: " +
			"build it with -buildmode=c-shared (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared), " +
			`or set abi = "wasi" if it is a command that reads its arguments on stdin`)
	}
	return a, nil
}

// callsExports says whether an ABI calls a module's exports other than _start: all but
// the wasi ABI and an Extism std command, which run a command's main.
func callsExports(a abi) bool {
	switch a := a.(type) {
	case *wasiABI:
		return false
	case *extismABI:
		return !a.std
	}
	return true
}

func pickABI(p *Plugin, declared string, info moduleInfo) (abi, error) {
	v1 := p.exports["call"] && p.exports["describe"]
	v2 := p.exports["list_tools"] && p.exports["call_tool"]
	newMCP := func() abi {
		if v1 {
			return &mcpV1{extismEngine{p}}
		}
		return &mcpV2{extismEngine: extismEngine{p}}
	}
	newExtism := func() abi { return &extismABI{extismEngine: extismEngine{p}, std: isStdCommand(info)} }
	switch declared {
	case ABIMCP:
		if !v1 && !v2 {
			return nil, fmt.Errorf("abi mcp needs the exports call+describe (v1) or list_tools+call_tool (v2)")
		}
		return newMCP(), nil
	case ABIWASI:
		if !p.exports["_start"] {
			return nil, fmt.Errorf("abi wasi needs a WASI command exporting _start")
		}
		return &wasiABI{p: p}, nil
	case ABIExtism:
		return newExtism(), nil
	case "":
		switch {
		case v1 || v2:
			return newMCP(), nil
		case p.exports["_start"] && !info.extism:
			return &wasiABI{p: p}, nil
		default:
			return newExtism(), nil
		}
	default:
		return nil, fmt.Errorf("unknown abi %q (want mcp, extism or wasi)", declared)
	}
}

// extismEngine is what the ABIs run on Extism share: the module compiled by Extism
// (Plugin.compiled), a pool of its instances (Plugin.pool), and raw calls of its
// exports on them (Plugin.invoke), which is all a hook needs. An ABI embeds it and adds
// its tools.
type extismEngine struct{ p *Plugin }

// compile compiles the module with Extism's kernel and host functions and makes the
// pool of its instances.
func (e extismEngine) compile(ctx context.Context, s loadSpec, isolation string) error {
	p := e.p
	manifest := extism.Manifest{
		Wasm:   []extism.Wasm{extism.WasmData{Data: s.wasm}},
		Config: p.perms.Config,
		Memory: &extism.ManifestMemory{
			MaxHttpResponseBytes: p.perms.MaxOutput,
			MaxVarBytes:          p.perms.MaxOutput,
		},
	}
	// Extism's own check only sees the first URL and no port; netGuard
	// checks every connection (an empty policy denies all), so let every
	// request through to it and have one message for every refusal.
	manifest.AllowedHosts = []string{"*"}
	var compiled *extism.CompiledPlugin
	err := s.r.compile(ctx, s.sum, func() (err error) {
		compiled, err = extism.NewCompiledPlugin(ctx, manifest, extism.PluginConfig{
			RuntimeConfig: s.r.runtimeConfig(),
			EnableWasi:    true,
		}, p.hostFunctions())
		return err
	})
	if err != nil {
		return fmt.Errorf("compile: %w", err)
	}
	p.compiled = compiled
	s.compiled()
	p.pool = newPool(s.size, isolation, p.newInstance)
	return nil
}

func (e extismEngine) callExport(ctx context.Context, export string, input []byte) ([]byte, error) {
	return e.p.invoke(ctx, export, input)
}

func (e extismEngine) refreshTools(context.Context) error { return nil }

func (e extismEngine) request(_ context.Context, export string, _ json.RawMessage) (json.RawMessage, error) {
	return nil, errNotMCPRequest(e.p, export)
}

// close closes the compiled module; Plugin.Close has disposed of the instances.
func (e extismEngine) close(ctx context.Context) error {
	if e.p.compiled != nil {
		return e.p.compiled.Close(ctx)
	}
	return nil
}

// errNotMCPRequest is MCPRequest's answer for what the plugin does not serve.
func errNotMCPRequest(p *Plugin, export string) error {
	return fmt.Errorf("plugin %q: %s is not an mcp v2 request it serves", p.name, export)
}
