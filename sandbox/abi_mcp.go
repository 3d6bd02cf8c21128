package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
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

// mcpV1 is the v1 convention: describe and call.
type mcpV1 struct{ extismEngine }

// mcpV2 is the v2 convention: list_tools and call_tool in the request/context
// envelope, and the prompt and resource requests (mcpRequests).
type mcpV2 struct {
	extismEngine
	requestID atomic.Int64 // numbers the requests
}

func (*mcpV1) name() string { return ABIMCP }
func (*mcpV2) name() string { return ABIMCP }

func (a *mcpV1) load(ctx context.Context, s loadSpec) error { return a.loadMCP(ctx, s, a.refreshTools) }
func (a *mcpV2) load(ctx context.Context, s loadSpec) error { return a.loadMCP(ctx, s, a.refreshTools) }

func (a *mcpV1) refreshTools(ctx context.Context) error {
	return a.listMCPTools(ctx, "describe", []byte("{}"))
}

func (a *mcpV2) refreshTools(ctx context.Context) error {
	input, _ := json.Marshal(map[string]any{"context": a.context(map[string]any{})})
	return a.listMCPTools(ctx, "list_tools", input)
}

func (a *mcpV1) callTool(ctx context.Context, name string, args []byte) (CallResult, error) {
	params, _ := mcpParams(ctx, name, args)
	input, _ := json.Marshal(map[string]any{"params": params})
	return a.callMCP(ctx, "call", input)
}

func (a *mcpV2) callTool(ctx context.Context, name string, args []byte) (CallResult, error) {
	params, meta := mcpParams(ctx, name, args)
	input, _ := json.Marshal(map[string]any{"request": params, "context": a.context(meta)})
	return a.callMCP(ctx, "call_tool", input)
}

func (a *mcpV2) request(ctx context.Context, export string, params json.RawMessage) (json.RawMessage, error) {
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	in, _ := json.Marshal(map[string]any{"request": params, "context": a.context(map[string]any{})})
	out, err := a.p.invoke(ctx, export, in)
	if err != nil {
		return nil, err
	}
	if !json.Valid(out) {
		return nil, fmt.Errorf("plugin %q: %s answered with something that is not JSON", a.p.name, export)
	}
	return json.RawMessage(strings.ToValidUTF8(string(out), "\uFFFD")), nil
}

// context is the v2 envelope's context of the next request.
func (a *mcpV2) context(meta map[string]any) mcpContext {
	return mcpContext{Meta: meta, ID: a.requestID.Add(1)}
}

// loadMCP compiles the module and asks the plugin for its tools (list).
func (e extismEngine) loadMCP(ctx context.Context, s loadSpec, list func(context.Context) error) error {
	if err := e.compile(ctx, s, e.p.perms.Isolation); err != nil {
		return err
	}
	if len(s.decls) > 0 {
		return fmt.Errorf("mcp plugins describe their own tools; remove the declared tools")
	}
	return list(ctx)
}

// listMCPTools calls describe or list_tools and makes its answer the plugin's tools.
func (e extismEngine) listMCPTools(ctx context.Context, export string, input []byte) error {
	out, err := e.p.invoke(ctx, export, input)
	if err != nil {
		return err
	}
	tools, err := decodeToolList(out)
	if err != nil {
		return fmt.Errorf("%s: %w", export, err)
	}
	e.p.toolsMu.Lock()
	e.p.tools = tools
	e.p.toolsMu.Unlock()
	return nil
}

// callMCP calls call or call_tool and decodes its CallToolResult.
func (e extismEngine) callMCP(ctx context.Context, export string, input []byte) (CallResult, error) {
	out, err := e.p.invoke(ctx, export, input)
	if err != nil {
		return CallResult{}, err
	}
	return parseCallResult(e.p, export, out, false)
}

// mcpParams are a tools/call's params: the tool's name, its arguments (mcpArguments)
// and the caller's _meta (WithCallMeta), left out when it gave none. meta is that
// _meta, or an empty one, for the v2 context.
func mcpParams(ctx context.Context, name string, args []byte) (params map[string]any, meta map[string]any) {
	params = map[string]any{"name": name, "arguments": mcpArguments(args)}
	meta = callMetaOf(ctx)
	if len(meta) > 0 {
		params["_meta"] = meta
	} else {
		meta = map[string]any{}
	}
	return params, meta
}

// RefreshTools asks an mcp plugin for its tools again, after it said its list changed
// (notify_tool_list_changed). A plugin of another ABI has a fixed list: nothing to do.
func (p *Plugin) RefreshTools(ctx context.Context) error { return p.abi.refreshTools(ctx) }

// mcpRequests are the v2 exports MCPRequest may call: a v2 plugin's prompts, resources
// and completions of their arguments.
var mcpRequests = map[string]bool{"list_prompts": true, "get_prompt": true, "list_resources": true,
	"list_resource_templates": true, "read_resource": true, "complete": true}

// MCPRequest calls one of a v2 mcp plugin's prompt and resource exports (list_prompts,
// get_prompt, list_resources, list_resource_templates, read_resource, complete) with params in the
// v2 envelope, and returns its answer: JSON (checked), in MCP's shape for that request.
// A plugin without the export, or of another ABI, is an error the caller can test with
// HasExport first.
func (p *Plugin) MCPRequest(ctx context.Context, export string, params json.RawMessage) (json.RawMessage, error) {
	if !mcpRequests[export] {
		return nil, errNotMCPRequest(p, export)
	}
	return p.abi.request(ctx, export, params)
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
