//go:build wasip1

// Command jsruntime is the JavaScript runtime plugin: an mcp tool plugin
// (ABI.md, v1 exports describe and call; and guard, the guardrail hook)
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

func guard(input []byte) ([]byte, error) {
	if err := ready(); err != nil {
		return nil, err
	}
	return engine.Guard(sdkHost{}, input)
}

//go:wasmexport describe
func describeExport() int32 { return sdk.Serve(describe) }

//go:wasmexport call
func callExport() int32 { return sdk.Serve(call) }

//go:wasmexport guard
func guardExport() int32 { return sdk.Serve(guard) }
