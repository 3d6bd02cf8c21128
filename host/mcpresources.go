package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/mcpclient"
)

// The MCP servers' resources reach the agent through two built-in tools, offered when a
// server announces resources: mcp_resources lists them (and their templates), and
// mcp_read_resource reads one by URI. They are tools like any other, so a read goes
// through the one tool pipeline (schema, guardrails, permissions, approvals, caps) and
// is stored in the session; what a server returns is bounded by its max_output.

// resourceToolsOwner owns the resource tools (ModelToolNames, PluginInfo).
const resourceToolsOwner = "agenthost/mcp"

func (h *Host) mcpResourceTools() []loop.Tool {
	names := h.resourceServers()
	if len(names) == 0 {
		return nil
	}
	enum, _ := json.Marshal(names)
	list := loop.FuncTool{ToolSpec: loop.ToolSpec{Name: "mcp_resources",
		Description: "List the resources (and resource templates) of the MCP servers " + strings.Join(names, ", ") + "; read one with mcp_read_resource.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"server":{"type":"string","enum":` + string(enum) + `}},"additionalProperties":false}`)},
		Fn: func(ctx context.Context, c loop.ToolCall) (loop.ToolResult, error) {
			var a struct{ Server string }
			_ = json.Unmarshal([]byte(c.Arguments), &a)
			out, err := h.listResources(ctx, a.Server)
			if err != nil {
				return loop.ErrorResult("Error: " + err.Error()), nil
			}
			b, _ := json.Marshal(out)
			return loop.ToolResult{Content: []loop.Part{loop.TextPart(string(b))}, Structured: b}, nil
		}}
	read := loop.FuncTool{ToolSpec: loop.ToolSpec{Name: "mcp_read_resource",
		Description: "Read a resource of an MCP server (" + strings.Join(names, ", ") + ") by its URI.",
		InputSchema: json.RawMessage(`{"type":"object","required":["server","uri"],"properties":{"server":{"type":"string","enum":` + string(enum) + `},"uri":{"type":"string","minLength":1}},"additionalProperties":false}`)},
		Fn: func(ctx context.Context, c loop.ToolCall) (loop.ToolResult, error) {
			var a struct{ Server, URI string }
			if err := json.Unmarshal([]byte(c.Arguments), &a); err != nil {
				return loop.ErrorResult("Error: " + err.Error()), nil
			}
			res, err := h.ReadMCPResource(ctx, a.Server, a.URI)
			if errors.Is(err, ErrNoResourceServer) {
				return loop.ErrorResult("Error: " + err.Error()), nil
			}
			return res, err
		}}
	return []loop.Tool{builtinTool{list, resourceToolsOwner}, builtinTool{read, resourceToolsOwner}}
}

// resourceServers names the MCP servers that announce resources, in manifest order.
func (h *Host) resourceServers() []string {
	var names []string
	for _, s := range h.mcpServers {
		if s.HasResources() {
			names = append(names, s.Name())
		}
	}
	return names
}

// resourceServer is the MCP server of that name announcing resources, or nil.
func (h *Host) resourceServer(name string) *mcpclient.Server {
	for _, s := range h.mcpServers {
		if s.Name() == name && s.HasResources() {
			return s
		}
	}
	return nil
}

func (h *Host) listResources(ctx context.Context, only string) (map[string][]mcpclient.Resource, error) {
	out := map[string][]mcpclient.Resource{}
	for _, n := range h.resourceServers() {
		if only != "" && only != n {
			continue
		}
		rs, err := h.resourceServer(n).ListResources(ctx)
		if err != nil {
			return nil, err
		}
		out[n] = rs
	}
	return out, nil
}

// MCPResources lists the resources and resource templates of every MCP server that
// announces resources, by server name (empty when none does): what the mcp_resources tool
// answers, and the console's list of what a user can attach to a message.
func (h *Host) MCPResources(ctx context.Context) (map[string][]mcpclient.Resource, error) {
	return h.listResources(ctx, "")
}

// ErrNoResourceServer is ReadMCPResource's error for a server name that is not an MCP
// server of the manifest announcing resources.
var ErrNoResourceServer = errors.New("no MCP server with resources of that name")

// ReadMCPResource reads a resource of an MCP server by URI: text as text, an image as an
// image, bounded by the server's max_output; a server's refusal is an error result. The
// mcp_read_resource tool and the console's attachments read through it.
func (h *Host) ReadMCPResource(ctx context.Context, server, uri string) (loop.ToolResult, error) {
	s := h.resourceServer(server)
	if s == nil {
		return loop.ToolResult{}, fmt.Errorf("%w: %q", ErrNoResourceServer, server)
	}
	return s.ReadResource(ctx, uri)
}

// builtinTool is one of the host's own tools with the names the tool listing needs.
type builtinTool struct {
	loop.FuncTool
	by string
}

func (t builtinTool) owner() string     { return t.by }
func (t builtinTool) ownName() string   { return t.Name }
func (t builtinTool) modelName() string { return t.Name }

// MCPPrompt renders an MCP server's prompt ("SERVER/NAME", or NAME when one server has
// it) with its arguments, as the messages a run starts from (run --prompt).
func (h *Host) MCPPrompt(ctx context.Context, ref string, args map[string]string) ([]loop.Message, error) {
	server, name, qualified := strings.Cut(ref, "/")
	if !qualified {
		server, name = "", ref
	}
	var have []string
	for _, s := range h.mcpServers {
		if !s.HasPrompts() {
			continue
		}
		have = append(have, s.Name())
		if s.Name() == server {
			return s.GetPrompt(ctx, name, args)
		}
	}
	if !qualified && len(have) == 1 {
		return h.mcpServers[slices.IndexFunc(h.mcpServers, func(s *mcpclient.Server) bool { return s.Name() == have[0] })].GetPrompt(ctx, name, args)
	}
	if len(have) == 0 {
		return nil, fmt.Errorf("prompt %q: no MCP server of this manifest offers prompts", ref)
	}
	return nil, fmt.Errorf("prompt %q: name it SERVER/NAME (MCP servers with prompts: %s)", ref, strings.Join(have, ", "))
}
