package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
)

// The extism ABI makes any Extism export a tool, as declared in the
// manifest. The tool's input is the arguments JSON itself (Input ""
// or "arguments"), or the value of one string argument (Input "text": the
// export receives the text, as count_vowels expects). The output becomes a
// text result, unless it is a CallToolResult JSON.

// extismABI is the extism ABI: declared exports. std marks an Extism std command
// (abi_extism_std.go), whose tools all run _start, one instance per call.
type extismABI struct {
	extismEngine
	std   bool
	decls map[string]ToolDecl // by tool name
}

func (*extismABI) name() string { return ABIExtism }

func (a *extismABI) load(ctx context.Context, s loadSpec) error {
	isolation := a.p.perms.Isolation
	if a.std { // a Go command exits after one call (abi_extism_std.go)
		isolation = IsolationCall
	}
	if err := a.compile(ctx, s, isolation); err != nil {
		return err
	}
	decls := s.decls
	if a.std {
		var err error
		if decls, err = stdCommandDecls(a.p.name, decls); err != nil {
			return err
		}
	}
	return a.declare(decls)
}

// declare checks the declared tools against the module and makes them the plugin's.
func (a *extismABI) declare(decls []ToolDecl) error {
	a.decls = make(map[string]ToolDecl, len(decls))
	for _, d := range decls {
		if d.Name == "" {
			return fmt.Errorf("a declared tool has no name")
		}
		if _, dup := a.decls[d.Name]; dup {
			return fmt.Errorf("tool %q declared twice", d.Name)
		}
		if d.Export == "" {
			d.Export = d.Name
		}
		if !a.p.exports[d.Export] {
			return fmt.Errorf("tool %q: the module has no export %q", d.Name, d.Export)
		}
		if len(d.InputSchema) > 0 && !json.Valid(d.InputSchema) {
			return fmt.Errorf("tool %q: input_schema is not JSON", d.Name)
		}
		a.decls[d.Name] = d
		a.p.tools = append(a.p.tools, ToolSpec{Name: d.Name, Description: d.Description, InputSchema: d.InputSchema})
	}
	return nil
}

func (a *extismABI) callTool(ctx context.Context, name string, args []byte) (CallResult, error) {
	d := a.decls[name]
	input, err := extismInput(d, args)
	if err != nil {
		return errorResult(err), nil
	}
	out, err := a.p.invoke(ctx, d.Export, input)
	if err != nil {
		return CallResult{}, err
	}
	return parseCallResult(a.p, d.Export, out, true)
}

// extismInput is the input of a declared tool's export: the arguments JSON,
// or the value of its one string argument d.Input.
func extismInput(d ToolDecl, args []byte) ([]byte, error) {
	if d.Input == "" || d.Input == "arguments" {
		return args, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(args, &fields); err != nil {
		return nil, fmt.Errorf("arguments are not a JSON object: %v", err)
	}
	raw, ok := fields[d.Input]
	var s string
	if !ok || json.Unmarshal(raw, &s) != nil {
		return nil, fmt.Errorf("argument %q (a string) is required", d.Input)
	}
	return []byte(s), nil
}
