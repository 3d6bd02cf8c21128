package host

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/mcpclient"
	"github.com/agenthost/agenthost/sandbox"
)

// InvalidArgumentsError is a CallTool refused before the plugin ran: the arguments are
// not JSON or break the tool's input schema.
type InvalidArgumentsError struct{ Err error }

func (e *InvalidArgumentsError) Error() string { return e.Err.Error() }
func (e *InvalidArgumentsError) Unwrap() error { return e.Err }

// CallTool calls one tool of a loaded plugin outside a run (`agenthost plugins call`).
// The arguments are checked as a run checks them (loop.ToolSet.ValidateArguments), so a
// call refused here is one the model's would be refused too; then the sandbox runs it
// with the plugin's permissions. What the plugin logs goes to Options.OnReport.
func (h *Host) CallTool(ctx context.Context, plugin, tool string, args []byte) (sandbox.CallResult, error) {
	if srv := h.mcpServer(plugin); srv != nil {
		return h.callMCPTool(ctx, srv, tool, args)
	}
	p, ok := h.Plugin(plugin)
	if !ok {
		return sandbox.CallResult{}, fmt.Errorf("no plugin %q", plugin)
	}
	var spec *sandbox.ToolSpec
	for _, s := range p.Tools() {
		if s.Name == tool {
			spec = &s
		}
	}
	if spec == nil {
		return sandbox.CallResult{}, fmt.Errorf("plugin %q has no tool %q (it has: %s)", plugin, tool, toolNames(p))
	}
	ts, err := loop.NewToolSet(&pluginTool{plugin: p, name: tool, tool: tool, spec: *spec})
	if err != nil {
		return sandbox.CallResult{}, err
	}
	if len(args) == 0 {
		args = []byte("{}")
	}
	if err := ts.ValidateArguments(tool, string(args)); err != nil {
		return sandbox.CallResult{}, &InvalidArgumentsError{err}
	}
	return p.CallTool(ctx, tool, args)
}

func toolNames(p *sandbox.Plugin) string {
	var names []string
	for _, s := range p.Tools() {
		names = append(names, s.Name)
	}
	if len(names) == 0 {
		return "no tools"
	}
	out := names[0]
	for _, n := range names[1:] {
		out += ", " + n
	}
	return out
}

// ErrNoTools is a tool plugin that offers no tool: almost always a build or manifest
// slip, so its error says how to fix each likely one.
var ErrNoTools = errors.New("declares no tools")

func noToolsError(p *sandbox.Plugin) error {
	switch p.ABI() {
	case sandbox.ABIMCP:
		return fmt.Errorf("plugin %q %w: its describe (or list_tools) export listed none; "+
			"a Go plugin registers them with sdk.AddTool in an init function", p.Name(), ErrNoTools)
	case sandbox.ABIWASI:
		return fmt.Errorf("plugin %q %w: a wasi command's tools are declared in the manifest under [[plugins.tools]]", p.Name(), ErrNoTools)
	}
	return fmt.Errorf("plugin %q %w: it has no describe or list_tools export, so it was loaded as an extism module, "+
		"whose tools are declared under [[plugins.tools]]. A Go plugin built with the agenthost SDK must import "+
		`_ "github.com/agenthost/agenthost/plugins/sdk/exports/mcptool"`+" to export them", p.Name(), ErrNoTools)
}

// ToolEntry is one tool of a tool plugin as the model sees it.
type ToolEntry struct {
	Name   string // the name the model calls (plugin__tool on a collision)
	Plugin string // the plugin's or MCP server's name
	Tool   string // the plugin's own name for it
	Spec   sandbox.ToolSpec
}

// ToolList lists the tool plugins' tools in manifest order, named as the model sees them.
func (h *Host) ToolList() []ToolEntry {
	h.toolsMu.RLock()
	defer h.toolsMu.RUnlock()
	out := make([]ToolEntry, 0, len(h.tools))
	for _, t := range h.tools {
		ot := t.(ownedTool)
		spec := t.Spec()
		out = append(out, ToolEntry{Name: ot.modelName(), Plugin: ot.owner(), Tool: ot.ownName(),
			Spec: sandbox.ToolSpec{Name: ot.ownName(), Description: spec.Description, InputSchema: spec.InputSchema}})
	}
	return out
}

func (h *Host) mcpServer(name string) *mcpclient.Server {
	for _, s := range h.mcpServers {
		if s.Name() == name {
			return s
		}
	}
	return nil
}

// callMCPTool is CallTool for a tool of an MCP server: the same argument check, then the
// server; the result in the sandbox's shape.
func (h *Host) callMCPTool(ctx context.Context, srv *mcpclient.Server, tool string, args []byte) (sandbox.CallResult, error) {
	var t *mcpTool
	h.toolsMu.RLock()
	defer h.toolsMu.RUnlock()
	for _, x := range h.tools {
		if mt, ok := x.(*mcpTool); ok && mt.server == srv && mt.tool.Name == tool {
			t = mt
		}
	}
	if t == nil {
		return sandbox.CallResult{}, fmt.Errorf("mcp server %q has no tool %q", srv.Name(), tool)
	}
	ts, err := loop.NewToolSet(t)
	if err != nil {
		return sandbox.CallResult{}, err
	}
	if len(args) == 0 {
		args = []byte("{}")
	}
	if err := ts.ValidateArguments(t.name, string(args)); err != nil {
		return sandbox.CallResult{}, &InvalidArgumentsError{err}
	}
	res, err := t.Call(ctx, loop.ToolCall{Name: t.name, Arguments: string(args)})
	if err != nil {
		return sandbox.CallResult{}, err
	}
	out := sandbox.CallResult{IsError: res.IsError, StructuredContent: res.Structured}
	for _, p := range res.Content {
		if p.Type == loop.PartImage {
			mime, data, _ := strings.Cut(strings.TrimPrefix(p.URL, "data:"), ";base64,")
			out.Content = append(out.Content, sandbox.Content{Type: "image", Data: data, MimeType: mime})
			continue
		}
		out.Content = append(out.Content, sandbox.Content{Type: "text", Text: p.Text})
	}
	return out, nil
}
