//go:build wasip1

// Command jsruntime is the JavaScript runtime plugin: an mcp tool plugin
// (ABI.md, v1 exports describe and call; and guard, the guardrail hook)
// whose tools are the ones a JavaScript bundle declares. The host gives it
// the bundle at load as environment variables (AGENTHOST_JS_BUNDLE, base64,
// and AGENTHOST_JS_FILE, its name in stack traces; jsbundle.Environ), and
// init runs it: a pre-initialised plugin's snapshot starts with the bundle
// loaded. Everything else — permissions, limits, isolation, pools,
// deadlines — is the sandbox's, as for any plugin. Built by `make plugins`
// (scripts/plugins.d/jsruntime.sh).
package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/agenthost/agenthost/plugins/js"
	"github.com/agenthost/agenthost/plugins/sdk"
)

func main() {}

var (
	engine  *js.Engine
	loadErr error
)

func init() {
	engine, loadErr = load()
}

func load() (*js.Engine, error) {
	enc, ok := os.LookupEnv("AGENTHOST_JS_BUNDLE")
	if !ok {
		return nil, errors.New("jsruntime: no bundle: the host sets AGENTHOST_JS_BUNDLE (agent.toml: [[plugins]] js = \"tool.ts\")")
	}
	src, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, fmt.Errorf("jsruntime: AGENTHOST_JS_BUNDLE is not base64: %w", err)
	}
	file := os.Getenv("AGENTHOST_JS_FILE")
	if file == "" {
		file = "bundle.js"
	}
	return js.Load(file, string(src))
}

type spec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

func describe(_ []byte) ([]byte, error) {
	if loadErr != nil {
		return nil, loadErr
	}
	tools := []spec{}
	for _, t := range engine.Tools() {
		tools = append(tools, spec{t.Name, t.Description, t.InputSchema})
	}
	return json.Marshal(map[string][]spec{"tools": tools})
}

func call(input []byte) ([]byte, error) {
	if loadErr != nil {
		return nil, loadErr
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
	if loadErr != nil {
		return nil, loadErr
	}
	return engine.Guard(sdkHost{}, input)
}

//go:wasmexport describe
func describeExport() int32 { return sdk.Serve(describe) }

//go:wasmexport call
func callExport() int32 { return sdk.Serve(call) }

//go:wasmexport guard
func guardExport() int32 { return sdk.Serve(guard) }
