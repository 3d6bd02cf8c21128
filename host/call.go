package host

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/sandbox"
)

// InvalidArgumentsError is a CallPluginTool refused before anything ran: the arguments
// are not JSON or break the tool's input schema.
type InvalidArgumentsError struct{ Err error }

func (e *InvalidArgumentsError) Error() string { return e.Err.Error() }
func (e *InvalidArgumentsError) Unwrap() error { return e.Err }

// CallPluginTool is CallTool for a tool named by its plugin (or MCP server) and its own
// name, as `agenthost plugins call PLUGIN TOOL` names it: the whole tool pipeline,
// audited and traced, in a session of its own unless opts names one. Arguments that
// break the tool's schema are refused first with an *InvalidArgumentsError (the CLI's
// usage error); the pipeline checks them again, as it checks a model's. The result is
// in the sandbox's (MCP's CallToolResult) shape; err is set when the call could not be
// made at all (refused, the store failing), with the run's result.
func (d *Door) CallPluginTool(ctx context.Context, p access.Principal, plugin, tool string, args []byte, opts CallOptions) (sandbox.CallResult, loop.RunResult, error) {
	var entry *ToolEntry
	var owns bool
	for _, t := range d.h.ToolList() {
		if t.Plugin != plugin {
			continue
		}
		owns = true
		if t.Tool == tool {
			entry = &t
		}
	}
	switch {
	case !owns:
		return sandbox.CallResult{}, loop.RunResult{}, fmt.Errorf("no tool plugin or mcp server %q", plugin)
	case entry == nil:
		return sandbox.CallResult{}, loop.RunResult{}, fmt.Errorf("%q has no tool %q", plugin, tool)
	}
	if len(args) == 0 {
		args = []byte("{}")
	}
	ts, err := loop.NewToolSet(specTool{entry.Name, entry.Spec})
	if err != nil {
		return sandbox.CallResult{}, loop.RunResult{}, err
	}
	if err := ts.ValidateArguments(entry.Name, string(args)); err != nil {
		return sandbox.CallResult{}, loop.RunResult{}, &InvalidArgumentsError{err}
	}
	res, run := d.CallTool(ctx, p, entry.Name, args, opts)
	if run.Status != loop.StatusCompleted {
		err := run.Err
		if err == nil {
			err = fmt.Errorf("the call ended %s/%s", run.Status, run.Reason)
		}
		return sandbox.CallResult{}, run, err
	}
	return callResultOf(res), run, nil
}

// specTool is a tool's spec alone, for checking arguments against it.
type specTool struct {
	name string
	spec sandbox.ToolSpec
}

func (t specTool) Spec() loop.ToolSpec {
	return loop.ToolSpec{Name: t.name, Description: t.spec.Description, InputSchema: t.spec.InputSchema}
}

func (specTool) Call(context.Context, loop.ToolCall) (loop.ToolResult, error) {
	return loop.ToolResult{}, errors.New("a spec is not called")
}

// callResultOf is a pipeline's result in the sandbox's shape: text, images (the loop
// carries them as data URLs) and the structured twin.
func callResultOf(res loop.ToolResult) sandbox.CallResult {
	out := sandbox.CallResult{IsError: res.IsError, StructuredContent: res.Structured}
	for _, p := range res.Content {
		if p.Type == loop.PartImage {
			mime, data, _ := strings.Cut(strings.TrimPrefix(p.URL, "data:"), ";base64,")
			out.Content = append(out.Content, sandbox.Content{Type: "image", Data: data, MimeType: mime})
			continue
		}
		out.Content = append(out.Content, sandbox.Content{Type: "text", Text: p.Text})
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
