package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// The mcp ABI is the hyper-mcp / mcp.run convention.
//
//	v1: describe() → {"tools":[{name, description, inputSchema}]}
//	    call({"params":{"name","arguments"}}) → CallToolResult
//	v2: list_tools({"context":…}) → {"tools":[…]}
//	    call_tool({"request":{"name","arguments"},"context":…}) → CallToolResult
//
// The v2 context carries a request id; the sandbox numbers its calls.

type mcpToolList struct {
	Tools []ToolSpec `json:"tools"`
}

type mcpContext struct {
	Meta map[string]any `json:"_meta"`
	ID   int64          `json:"id"`
}

func (p *Plugin) loadMCPTools(ctx context.Context) error {
	export, input := "describe", []byte("{}")
	if !p.mcpV1 {
		export = "list_tools"
		input, _ = json.Marshal(map[string]any{"context": mcpContext{Meta: map[string]any{}, ID: p.requestID.Add(1)}})
	}
	out, err := p.invoke(ctx, export, input)
	if err != nil {
		return err
	}
	var list mcpToolList
	if err := json.Unmarshal(out, &list); err != nil {
		return fmt.Errorf("%s returned no tool list: %w", export, err)
	}
	p.tools = list.Tools
	return nil
}

func (p *Plugin) callMCP(ctx context.Context, name string, args json.RawMessage) (CallResult, error) {
	var input []byte
	var export string
	if p.mcpV1 {
		export = "call"
		input, _ = json.Marshal(map[string]any{"params": map[string]any{"name": name, "arguments": args}})
	} else {
		export = "call_tool"
		input, _ = json.Marshal(map[string]any{
			"request": map[string]any{"name": name, "arguments": args},
			"context": mcpContext{Meta: map[string]any{}, ID: p.requestID.Add(1)},
		})
	}
	out, err := p.invoke(ctx, export, input)
	if err != nil {
		return CallResult{}, err
	}
	return parseCallResult(p, export, out, false)
}

// parseCallResult decodes a CallToolResult. With plainFallback, output that
// is not one is taken as text (the wasi ABI); otherwise it is a fault.
func parseCallResult(p *Plugin, export string, out []byte, plainFallback bool) (CallResult, error) {
	var res CallResult
	if plainFallback && !looksLikeObject(out) {
		return textResult(plainText(out)), nil
	}
	if err := json.Unmarshal(out, &res); err != nil || res.Content == nil {
		if plainFallback {
			return textResult(plainText(out)), nil
		}
		if err == nil {
			err = fmt.Errorf("no content")
		}
		return CallResult{}, &Fault{Plugin: p.name, Export: export, Kind: FaultGuest,
			Err: fmt.Errorf("output is not a CallToolResult: %v", err)}
	}
	return res, nil
}

// plainText is a command's output as a result: without the one line ending a program
// prints after its last line ("3\n" is the answer "3").
func plainText(out []byte) string {
	s := string(out)
	s = strings.TrimSuffix(s, "\n")
	return strings.TrimSuffix(s, "\r")
}

// looksLikeObject is a cheap test that spares decoding plain-text output.
func looksLikeObject(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c == '{'
	}
	return false
}
