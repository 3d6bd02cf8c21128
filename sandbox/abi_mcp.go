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
//	    call({"params":{"name","arguments","_meta"?}}) → CallToolResult
//	v2: list_tools({"context":…}) → {"tools":[…]}
//	    call_tool({"request":{"name","arguments","_meta"?},"context":{"_meta","id"}}) → CallToolResult
//
// The v2 context carries a request id; the sandbox numbers its calls. A call's _meta is
// the caller's (WithCallMeta), absent when it gave none.

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
	tools, err := decodeToolList(out)
	if err != nil {
		return fmt.Errorf("%s: %w", export, err)
	}
	p.toolsMu.Lock()
	p.tools = tools
	p.toolsMu.Unlock()
	return nil
}

// RefreshTools asks an mcp plugin for its tools again, after it said its list changed
// (notify_tool_list_changed). A plugin of another ABI has a fixed list: nothing to do.
func (p *Plugin) RefreshTools(ctx context.Context) error {
	if p.abi != ABIMCP {
		return nil
	}
	return p.loadMCPTools(ctx)
}

// mcpRequests are the v2 exports MCPRequest may call: a v2 plugin's prompts and resources.
var mcpRequests = map[string]bool{"list_prompts": true, "get_prompt": true, "list_resources": true,
	"list_resource_templates": true, "read_resource": true}

// MCPRequest calls one of a v2 mcp plugin's prompt and resource exports (list_prompts,
// get_prompt, list_resources, list_resource_templates, read_resource) with params in the
// v2 envelope, and returns its answer: JSON (checked), in MCP's shape for that request.
// A plugin without the export, or of another ABI, is an error the caller can test with
// HasExport first.
func (p *Plugin) MCPRequest(ctx context.Context, export string, params json.RawMessage) (json.RawMessage, error) {
	if !mcpRequests[export] || p.abi != ABIMCP || p.mcpV1 {
		return nil, fmt.Errorf("plugin %q: %s is not an mcp v2 request it serves", p.name, export)
	}
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	in, _ := json.Marshal(map[string]any{"request": params, "context": mcpContext{Meta: map[string]any{}, ID: p.requestID.Add(1)}})
	out, err := p.invoke(ctx, export, in)
	if err != nil {
		return nil, err
	}
	if !json.Valid(out) {
		return nil, fmt.Errorf("plugin %q: %s answered with something that is not JSON", p.name, export)
	}
	return json.RawMessage(strings.ToValidUTF8(string(out), "\uFFFD")), nil
}

// HasExport reports whether the module exports name.
func (p *Plugin) HasExport(name string) bool { return p.exports[name] }

// decodeToolList decodes a describe / list_tools answer. Every tool needs a
// name, unique in the plugin, and an input schema (if any) that is a JSON
// object: the model is offered exactly these.
func decodeToolList(out []byte) ([]ToolSpec, error) {
	var list mcpToolList
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("returned no tool list: %w", err)
	}
	seen := make(map[string]bool, len(list.Tools))
	for i, t := range list.Tools {
		if t.Name == "" {
			return nil, fmt.Errorf("tool %d has no name", i)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("tool %q listed twice", t.Name)
		}
		seen[t.Name] = true
		if len(t.InputSchema) > 0 && !looksLikeObject(t.InputSchema) && string(t.InputSchema) != "null" {
			return nil, fmt.Errorf("tool %q: inputSchema is not a JSON object", t.Name)
		}
		list.Tools[i].Name = validString(t.Name)
		list.Tools[i].Description = validString(t.Description)
		list.Tools[i].InputSchema = validJSON(t.InputSchema)
	}
	return list.Tools, nil
}

// mcpArguments is what an mcp plugin receives as a call's arguments: a
// JSON object. Anything else the model wrote (not JSON, or JSON that is not
// an object) arrives as {"_raw": "<what it wrote>"}, so the plugin can
// answer about it instead of receiving nothing.
func mcpArguments(args []byte) json.RawMessage {
	if looksLikeObject(args) && json.Valid(args) {
		return args
	}
	b, _ := json.Marshal(map[string]string{"_raw": validString(string(args))})
	return b
}

func (p *Plugin) callMCP(ctx context.Context, name string, args json.RawMessage) (CallResult, error) {
	args = mcpArguments(args)
	var input []byte
	var export string
	params := map[string]any{"name": name, "arguments": args}
	meta := callMetaOf(ctx) // the tools/call _meta (WithCallMeta)
	if len(meta) > 0 {
		params["_meta"] = meta
	} else {
		meta = map[string]any{}
	}
	if p.mcpV1 {
		export = "call"
		input, _ = json.Marshal(map[string]any{"params": params})
	} else {
		export = "call_tool"
		input, _ = json.Marshal(map[string]any{
			"request": params,
			"context": mcpContext{Meta: meta, ID: p.requestID.Add(1)},
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
