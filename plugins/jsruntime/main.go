//go:build wasip1

// Command jsruntime is the JavaScript runtime plugin: an mcp tool plugin
// (ABI.md, v1 exports describe and call; and the hook exports guard, on_step,
// before_final, context_build, permit and grade)
// whose tools are the ones a JavaScript bundle declares. The host gives it
// the bundle in its config (keys agenthost.js.bundle and agenthost.js.file,
// jsbundle.Bundle.Config), and an instance runs it at its first call
// (describe, at Load, is one). The module itself is the same for every
// bundle, so it is compiled — and pre-initialised — once for all of them.
// Everything else — permissions, limits, isolation, pools, deadlines — is
// the sandbox's, as for any plugin. Built by `make plugins`
// (scripts/plugins.d/jsruntime.sh).
package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/plugins/js"
	"github.com/agenthost/agenthost/plugins/sdk"
)

func main() {}

// The engine is made in init, so a pre-initialised snapshot starts with it;
// the bundle it runs is loaded at the instance's first call: reading config is
// a host function, which _initialize (pre-initialisation) may not call.
var (
	engine  = js.New()
	loaded  bool
	loadErr error
)

// Config keys the host gives the bundle in (jsbundle).
const (
	configBundle = "agenthost.js.bundle"
	configFile   = "agenthost.js.file"
)

func ready() error {
	if !loaded {
		loaded, loadErr = true, load()
	}
	return loadErr
}

func load() error {
	src, ok := sdk.Config(configBundle)
	if !ok {
		return errors.New("jsruntime: no bundle: the host gives it in config " + configBundle + " (agent.toml: [[plugins]] js = \"tool.ts\")")
	}
	file, _ := sdk.Config(configFile)
	if file == "" {
		file = "bundle.js"
	}
	return engine.Run(file, src)
}

type spec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

func describe(_ []byte) ([]byte, error) {
	if err := ready(); err != nil {
		return nil, err
	}
	tools := []spec{}
	for _, t := range engine.Tools() {
		tools = append(tools, spec{t.Name, t.Description, t.InputSchema})
	}
	return json.Marshal(map[string][]spec{"tools": tools})
}

func call(input []byte) ([]byte, error) {
	if err := ready(); err != nil {
		return nil, err
	}
	var in struct {
		Params struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
			Meta      struct {
				CallID    string `json:"agenthost/call_id"`
				SessionID string `json:"agenthost/session_id"`
				RunID     string `json:"agenthost/run_id"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, fmt.Errorf("call: input is not {\"params\":{…}}: %w", err)
	}
	args := in.Params.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	m := in.Params.Meta
	res := engine.Call(sdkHost{}, js.CallMeta{CallID: m.CallID, SessionID: m.SessionID, RunID: m.RunID}, in.Params.Name, args)
	if res.Content == nil {
		res.Content = []sdk.Content{}
	}
	return json.Marshal(res)
}

// hook answers a hook export with the function the bundle registered for it.
// A termination plugin may care about one of its two exports only: the other
// proceeds (ABI.md). Any other hook the bundle did not register is a fault.
func hook(export string) func([]byte) ([]byte, error) {
	return func(input []byte) ([]byte, error) {
		if err := ready(); err != nil {
			return nil, err
		}
		out, ok, err := engine.Hook(export, sdkHost{}, input)
		switch {
		case ok:
			return out, err
		case export == "on_step" || export == "before_final":
			return []byte(`{"verdict":""}`), nil
		}
		return nil, fmt.Errorf("%s: the bundle registered no function for it", export)
	}
}

//go:wasmexport describe
func describeExport() int32 { return sdk.Serve(describe) }

//go:wasmexport call
func callExport() int32 { return sdk.Serve(call) }

//go:wasmexport guard
func guardExport() int32 { return sdk.Serve(hook("guard")) }

//go:wasmexport on_step
func onStepExport() int32 { return sdk.Serve(hook("on_step")) }

//go:wasmexport before_final
func beforeFinalExport() int32 { return sdk.Serve(hook("before_final")) }

//go:wasmexport context_build
func contextBuildExport() int32 { return sdk.Serve(hook("context_build")) }

//go:wasmexport permit
func permitExport() int32 { return sdk.Serve(hook("permit")) }

//go:wasmexport grade
func gradeExport() int32 { return sdk.Serve(hook("grade")) }
