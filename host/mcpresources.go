package host

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/host/mcpclient"
	"github.com/agenthost/agenthost/loop"
)

// The MCP servers' resources reach the agent through two built-in tools, offered when a
// server announces resources: mcp_resources lists them (and their templates), and
// mcp_read_resource reads one by URI. They are tools like any other, so a read goes
// through the one tool pipeline (schema, guardrails, permissions, approvals, caps) and
// is stored in the session; what a server returns is bounded by its max_output.

func (h *Host) mcpResourceTools() []loop.Tool {
	var names []string
	servers := map[string]*mcpclient.Server{}
	for _, s := range h.mcpServers {
		if s.HasResources() {
			names = append(names, s.Name())
			servers[s.Name()] = s
		}
	}
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
			out := map[string][]mcpclient.Resource{}
			for _, n := range names {
				if a.Server != "" && a.Server != n {
					continue
				}
				rs, err := servers[n].ListResources(ctx)
				if err != nil {
					return loop.ErrorResult("Error: " + err.Error()), nil
				}
				out[n] = rs
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
			return servers[a.Server].ReadResource(ctx, a.URI)
		}}
	return []loop.Tool{builtinTool{list, "agenthost/mcp"}, builtinTool{read, "agenthost/mcp"}}
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
