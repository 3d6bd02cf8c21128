package sdk

import (
	"encoding/json"
	"fmt"
)

// A registered tool: its spec and its argument-decoding call.
type tool struct {
	spec ToolSpec
	call func(args json.RawMessage) (CallToolResult, error)
}

var registeredTools []tool

// AddTool registers a tool whose arguments decode into In (a struct; its
// schema is SchemaOf(In)). Call it from init(). An error returned by fn
// becomes an isError result holding err.Error(); so do undecodable
// arguments ("<name>: invalid arguments: …") and a panic in fn
// ("<name>: panic: …"). It panics when In has no schema or the name is taken,
// which fails the plugin's load — a programming error, not a call error.
func AddTool[In any](name, description string, fn func(In) (CallToolResult, error)) {
	var zero In
	schema, err := SchemaOf(zero)
	if err != nil {
		panic(fmt.Sprintf("sdk.AddTool(%q): %v", name, err))
	}
	// In's decoder is built now, in init (warm): a pre-initialised plugin keeps it.
	warm(new(In))
	AddToolSchema(name, description, schema, func(args json.RawMessage) (CallToolResult, error) {
		var in In
		if err := json.Unmarshal(args, &in); err != nil {
			return ErrorText(fmt.Sprintf("%s: invalid arguments: %v", name, err)), nil
		}
		return fn(in)
	})
}

// AddToolSchema registers a tool with a hand-written schema; fn gets the raw
// arguments JSON ("{}" when the caller sent none).
func AddToolSchema(name, description string, schema json.RawMessage, fn func(args json.RawMessage) (CallToolResult, error)) {
	for _, t := range registeredTools {
		if t.spec.Name == name {
			panic(fmt.Sprintf("sdk.AddTool(%q): tool registered twice", name))
		}
	}
	if !json.Valid(schema) {
		panic(fmt.Sprintf("sdk.AddTool(%q): schema is not JSON", name))
	}
	registeredTools = append(registeredTools, tool{
		spec: ToolSpec{Name: name, Description: description, InputSchema: schema},
		call: fn,
	})
}

// Tools lists the registered tools in registration order.
func Tools() []ToolSpec {
	specs := make([]ToolSpec, len(registeredTools))
	for i, t := range registeredTools {
		specs[i] = t.spec
	}
	return specs
}

// CallTool runs a registered tool. It never fails: every problem is an
// isError result naming the tool.
func CallTool(name string, args json.RawMessage) (res CallToolResult) {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	for _, t := range registeredTools {
		if t.spec.Name != name {
			continue
		}
		defer func() {
			if r := recover(); r != nil {
				res = ErrorText(fmt.Sprintf("%s: panic: %v", name, r))
			}
		}()
		out, err := t.call(args)
		if err != nil {
			return ErrorText(err.Error())
		}
		if out.Content == nil {
			out.Content = []Content{}
		}
		return out
	}
	return ErrorText(fmt.Sprintf("unknown tool %q", name))
}

// HandleDescribe answers the mcp v1 export describe: {"tools":[…]}.
func HandleDescribe([]byte) ([]byte, error) {
	return json.Marshal(map[string][]ToolSpec{"tools": Tools()})
}

// HandleListTools answers the mcp v2 export list_tools; its input
// ({"context":…}) is not needed.
func HandleListTools(input []byte) ([]byte, error) { return HandleDescribe(input) }

type toolRequest struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      callMeta        `json:"_meta"`
}

// callMeta is what agenthost puts in a tools/call request's _meta.
type callMeta struct {
	CallID    string `json:"agenthost/call_id"`
	SessionID string `json:"agenthost/session_id"`
	RunID     string `json:"agenthost/run_id"`
}

// current is the _meta of the call being served: an instance serves one call at a
// time, so a package variable is the call's own while its handler runs.
var current callMeta

// CallID is the id of the tool call being served, as the model gave it and the session
// stores it; "" outside a tool call or from a host that sends none.
//
// Calls are delivered at least once (ABI.md, "At least once"): a run that crashed or was
// aborted after a tool ran but before its result was stored calls the tool again, with
// the same id. A tool with side effects (a payment, an email, a row) keys them by
// CallID and answers a repeat with what it did the first time.
func CallID() string { return current.CallID }

// SessionID is the session of the tool call being served; "" outside one.
func SessionID() string { return current.SessionID }

// serving runs fn as the call whose _meta is meta.
func serving[T any](meta callMeta, fn func() T) T {
	current = meta
	defer func() { current = callMeta{} }()
	return fn()
}

// HandleCall answers the mcp v1 export call: {"params":{"name","arguments"}}
// → CallToolResult.
func HandleCall(input []byte) ([]byte, error) {
	var in struct {
		Params toolRequest `json:"params"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, fmt.Errorf("call: input is not {\"params\":{…}}: %w", err)
	}
	return json.Marshal(serving(in.Params.Meta, func() CallToolResult { return CallTool(in.Params.Name, in.Params.Arguments) }))
}

// HandleCallTool answers the mcp v2 export call_tool:
// {"request":{"name","arguments","_meta"},"context":{"_meta",…}} → CallToolResult. The
// request's _meta is MCP's; the context's is read when the request has none.
func HandleCallTool(input []byte) ([]byte, error) {
	var in struct {
		Request toolRequest `json:"request"`
		Context struct {
			Meta callMeta `json:"_meta"`
		} `json:"context"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, fmt.Errorf("call_tool: input is not {\"request\":{…}}: %w", err)
	}
	meta := in.Request.Meta
	if meta == (callMeta{}) {
		meta = in.Context.Meta
	}
	return json.Marshal(serving(meta, func() CallToolResult { return CallTool(in.Request.Name, in.Request.Arguments) }))
}

// warm builds the JSON decoder of v's type. encoding/json builds a type's codec by
// reflection on its first use; done in init, it is part of what a pre-initialised plugin
// (the default) keeps in its snapshot, so no fresh instance builds it again (about
// half of a fresh instance's first call of the calc example). A plugin built as is pays
// the same, once, at init instead of at its first call: only the codecs every tool call
// uses are warmed.
func warm(v any) { _ = json.Unmarshal([]byte("{}"), v) }

// warmIO builds a hook's codecs when its handler is registered (in init): the decoder of
// its input and the encoder of its output.
func warmIO[In, Out any]() {
	warm(new(In))
	var out Out
	_, _ = json.Marshal(out)
}

func init() {
	warm(new(toolRequest)) // the request of both tool ABIs (HandleCall, HandleCallTool)
	_, _ = json.Marshal(Text(""))
}
