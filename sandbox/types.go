package sandbox

import (
	"context"
	"encoding/json"
)

// ABI names, as written in agent.toml's `abi`.
const (
	ABIMCP    = "mcp"
	ABIExtism = "extism"
	ABIWASI   = "wasi"
)

// Config describes one plugin to load.
type Config struct {
	// Name identifies the plugin in errors and in Host calls.
	Name string
	// Wasm is the module. If empty, Path is read.
	Wasm []byte
	Path string
	// SHA256, when set, is the hex digest the module must have. It is checked
	// on the bytes Load compiles, read once from Path (a regular file of at
	// most MaxModuleSize), so no swap of the file can slip other bytes in.
	SHA256 string
	// ABI is "mcp", "extism", "wasi" or "" to detect it from the exports:
	// call+describe or list_tools+call_tool ⇒ mcp; _start without Extism
	// kernel imports ⇒ wasi; otherwise extism.
	ABI string
	// Tools declares the tools of an extism or wasi plugin (mcp plugins
	// describe their own; declaring tools for them is an error).
	Tools []ToolDecl
	// Args is the argv of every call of a wasi plugin (argv[0] included).
	Args []string
	// Permissions are what the plugin may touch; the zero value denies all.
	Permissions Permissions
	// PoolSize bounds the instances, hence the concurrent calls, of the
	// plugin; callers beyond it wait. 0 means as many as fit in 64 MiB of
	// the module's initial memory, at least 4 and at most 16 (plugin.go,
	// defaultPoolSize).
	PoolSize int
	// Host serves create_message, notifications and KV. Nil behaves like a
	// host that refuses everything.
	Host Host
	// Preinit says whether Load runs the module's _initialize once and serves
	// every instance from a module that starts where it ended (preinit.go;
	// README.md, "Pre-initialisation"). The zero value is PreinitOff.
	Preinit PreinitMode
}

// PreinitMode is Config.Preinit.
type PreinitMode uint8

const (
	// PreinitOff serves the module as built: every instance runs _initialize.
	PreinitOff PreinitMode = iota
	// PreinitIfSafe pre-initialises a module that passes every check and
	// serves any other as built (Plugin.Preinit says which, and why not).
	PreinitIfSafe
	// PreinitOn pre-initialises, or Load refuses the module with the reason.
	PreinitOn
)

// ToolDecl declares a tool backed by an export of an extism plugin, or by the
// command of a wasi plugin.
type ToolDecl struct {
	Name        string
	Description string
	InputSchema json.RawMessage
	// Export is the function called (extism ABI); it defaults to Name.
	Export string
	// Input is "arguments" or "" (the arguments JSON is the input) or the
	// name of one string argument whose value is the input (extism ABI).
	Input string
	// Args is the argv of this tool's calls (wasi ABI, argv[0] included); it
	// overrides Config.Args, so one command can serve several tools. Every
	// call also has AGENTHOST_TOOL set to the tool's name, and the call's ids
	// (WithCallMeta) as AGENTHOST_CALL_ID, AGENTHOST_SESSION_ID, AGENTHOST_RUN_ID.
	Args []string
}

// ToolSpec is a tool as the model sees it.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

// CallResult is the MCP CallToolResult shape. A failure of the plugin (trap,
// timeout, limit, denied permission) is a CallResult with IsError and the
// reason as text, never a Go error: Go errors are for the caller's mistakes
// (unknown tool, closed plugin, cancelled context).
type CallResult struct {
	Content           []Content       `json:"content"`
	IsError           bool            `json:"isError,omitempty"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	// Meta is MCP's _meta; MetaFinal in it asks to end the run (EndsRun).
	Meta map[string]any `json:"_meta,omitempty"`
}

// MetaFinal is the _meta key of a result that ends the run: its text (and
// structuredContent) is the final answer, as a Go done tool's is.
const MetaFinal = "agenthost/final"

// EndsRun reports whether the plugin asked this (successful) result to end
// the run: _meta {"agenthost/final": true}.
func (r CallResult) EndsRun() bool {
	final, _ := r.Meta[MetaFinal].(bool)
	return final && !r.IsError
}

// Content is one MCP content block: text, data (base64) with a MIME type (image,
// audio), or an embedded resource (resource: its uri, mimeType and text or blob).
type Content struct {
	Type     string          `json:"type"`
	Text     string          `json:"text,omitempty"`
	Data     string          `json:"data,omitempty"`
	MimeType string          `json:"mimeType,omitempty"`
	Resource json.RawMessage `json:"resource,omitempty"`
}

// Text joins the text blocks of a result; convenient for callers and tests.
func (r CallResult) Text() string {
	var s string
	for _, c := range r.Content {
		if c.Type == "text" {
			s += c.Text
		}
	}
	return s
}

func errorResult(err error) CallResult {
	return CallResult{Content: []Content{{Type: "text", Text: err.Error()}}, IsError: true}
}

func textResult(s string) CallResult {
	return CallResult{Content: []Content{{Type: "text", Text: s}}}
}

// Host is what the embedding process provides to plugins. Every method gets
// the context of the plugin call in progress, so the host can tell which run
// is calling. Methods are called from the plugin's goroutine while the call
// is in progress and count against its timeout.
type Host interface {
	// CreateMessage answers an MCP sampling request (create_message);
	// req and the result are the MCP CreateMessageRequestParam / Result JSON.
	CreateMessage(ctx context.Context, plugin string, req json.RawMessage) (json.RawMessage, error)
	// Notify receives notify_* calls; method is the MCP method name, e.g.
	// "notifications/progress", or MethodResultDelta for stream_result.
	Notify(ctx context.Context, plugin, method string, params json.RawMessage)
	KVGet(ctx context.Context, plugin, key string) ([]byte, bool, error)
	KVSet(ctx context.Context, plugin, key string, val []byte) error
	KVDelete(ctx context.Context, plugin, key string) error
}

// MethodResultDelta is the method Host.Notify receives for a stream_result call: params
// {"text": "…"}, a piece of the current tool call's result (invalid UTF-8 replaced).
const MethodResultDelta = "notifications/agenthost/result_delta"

// Eliciter is a Host that can ask a user for input (create_elicitation); req and the
// result are MCP's ElicitRequestParams / ElicitResult JSON. A Host that is not one
// answers every elicitation with a decline.
type Eliciter interface {
	Elicit(ctx context.Context, plugin string, req json.RawMessage) (json.RawMessage, error)
}
