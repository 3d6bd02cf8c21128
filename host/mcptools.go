package host

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/agenthost/agenthost/host/confine"
	"os"
	"path/filepath"
	"time"

	"github.com/agenthost/agenthost/host/mcpclient"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/telemetry"
)

// MCPServerConfig is one [[mcp_servers]] entry: an existing MCP server whose tools the
// agent gets. NOT sandboxed: a command runs with the user's rights (README.md).
type MCPServerConfig struct {
	Name            string            `toml:"name"`
	Command         []string          `toml:"command"` // argv, e.g. ["npx", "-y", "@modelcontextprotocol/server-everything"]
	Env             []string          `toml:"env"`     // host variables the command sees; nothing else
	Cwd             string            `toml:"cwd"`     // relative to the manifest
	URL             string            `toml:"url"`     // Streamable HTTP endpoint; ${VAR} expanded
	Headers         map[string]string `toml:"headers"` // ${VAR} expanded
	Tools           []string          `toml:"tools"`   // allow list
	SkipTools       []string          `toml:"skip_tools"`
	Timeout         Duration          `toml:"timeout"`          // per call; default 60s
	MaxOutput       Size              `toml:"max_output"`       // one result's bytes; default 1 MiB, as for plugins
	RequireApproval []string          `toml:"require_approval"` // its tools ("*": all) that ask first
	// Sandbox confines a command's process with Landlock (host/confine): the paths it may
	// read and write (relative to the manifest) and whether it may use the network.
	Sandbox *confine.Spec `toml:"sandbox"`
}

// checkMCPServer validates entry i and expands its values.
func (m *Manifest) checkMCPServer(i int, names map[string]int) error {
	s := &m.MCPServers[i]
	key := fmt.Sprintf("mcp_servers.%d", i)
	switch {
	case s.Name == "":
		return m.errKey(key, "mcp server has no name")
	case (len(s.Command) == 0) == (s.URL == ""):
		return m.errKey(key, "mcp server %q needs exactly one of command and url", s.Name)
	}
	if j, dup := names[s.Name]; dup {
		return m.errKey(key+".name", "name %q is taken (plugins or mcp_servers %d)", s.Name, j)
	}
	names[s.Name] = i
	s.URL = os.ExpandEnv(s.URL)
	for k, v := range s.Headers {
		s.Headers[k] = os.ExpandEnv(v)
	}
	if s.Cwd != "" {
		s.Cwd = m.resolve(s.Cwd)
	} else {
		s.Cwd = m.Dir
	}
	if len(s.Command) > 0 && filepath.Base(s.Command[0]) != s.Command[0] {
		s.Command[0] = m.resolve(s.Command[0])
	}
	if sb := s.Sandbox; sb != nil {
		if len(s.Command) == 0 {
			return m.errKey(key+".sandbox", "sandbox confines a command; mcp server %q has a url", s.Name)
		}
		m.resolveSandbox(sb)
	}
	return nil
}

// startMCPServers starts the manifest's MCP servers; one that cannot start is an error
// naming its manifest line.
func (h *Host) startMCPServers(ctx context.Context, version string) error {
	for i, c := range h.Manifest.MCPServers {
		srv, err := mcpclient.Start(ctx, mcpclient.Config{Name: c.Name, Command: c.Command, Env: c.Env, Dir: c.Cwd,
			URL: c.URL, Headers: c.Headers, Tools: c.Tools, SkipTools: c.SkipTools, Timeout: time.Duration(c.Timeout),
			MaxOutput: int64(c.MaxOutput), Version: version, Confine: c.Sandbox, ConfineExe: h.opts.ConfineExe})
		if err != nil {
			return h.Manifest.errKey(fmt.Sprintf("mcp_servers.%d", i), "%v", err)
		}
		h.mcpServers = append(h.mcpServers, srv)
		if c.Sandbox != nil && confine.Available() == 0 {
			h.steady = append(h.steady, fmt.Sprintf("mcp server %q runs unconfined: this kernel has no Landlock", c.Name))
		}
	}
	return nil
}

// MCPServers lists the connected MCP servers, in manifest order.
func (h *Host) MCPServers() []*mcpclient.Server { return h.mcpServers }

// mcpTool is one tool of an MCP server, as the loop sees it.
type mcpTool struct {
	server *mcpclient.Server
	name   string
	tool   mcpclient.Tool
}

func (t *mcpTool) owner() string     { return t.server.Name() }
func (t *mcpTool) ownName() string   { return t.tool.Name }
func (t *mcpTool) modelName() string { return t.name }

func (t *mcpTool) Spec() loop.ToolSpec {
	return loop.ToolSpec{Name: t.name, Description: t.tool.Description, InputSchema: t.tool.InputSchema,
		Annotations: map[string]string{"mcp_server": t.server.Name(), "sandboxed": "false"}}
}

func (t *mcpTool) Call(ctx context.Context, c loop.ToolCall) (out loop.ToolResult, err error) {
	ctx, end := telemetry.ToolSpan(ctx, t.name, "mcp:"+t.server.Name(), c.Arguments)
	defer func() { end(out, err) }()
	return t.server.Call(ctx, t.tool.Name, json.RawMessage(c.Arguments))
}

// requireApprovalOf lists the model-visible names of the MCP tools whose server asks
// for approval.
func (h *Host) requireApprovalOf() []string {
	var out []string
	for i, c := range h.Manifest.MCPServers {
		for _, t := range h.tools {
			mt, ok := t.(*mcpTool)
			if !ok || mt.server.Name() != h.Manifest.MCPServers[i].Name {
				continue
			}
			for _, want := range c.RequireApproval {
				if want == "*" || want == mt.tool.Name {
					out = append(out, mt.name)
				}
			}
		}
	}
	return out
}
