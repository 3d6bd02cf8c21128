package host

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/agenthost/agenthost/manifest"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/mcpclient"
	"github.com/agenthost/agenthost/telemetry"
)

// oauthOf is the entry's OAuth: the token `mcp login` stored, or client credentials
// with the secret read from its variable.
func (h *Host) oauthOf(ctx context.Context, c manifest.MCPServerConfig) (*mcpclient.OAuth, error) {
	o := c.OAuth
	if o == nil || c.PerUser() { // each user's own: perUserOf
		return nil, nil
	}
	if o.AuthCode() {
		src, err := h.storedTokenSource(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("oauth: %w", err)
		}
		oauth := &mcpclient.OAuth{TokenURL: o.TokenURL, Source: src}
		h.withStepUp(ctx, c, oauth)
		return oauth, nil
	}
	secret, ok := os.LookupEnv(o.ClientSecretEnv)
	if !ok || secret == "" {
		return nil, fmt.Errorf("oauth: the client secret's variable %s is not set", o.ClientSecretEnv)
	}
	return &mcpclient.OAuth{TokenURL: o.TokenURL, ClientID: o.ClientID, ClientSecret: secret, Scopes: o.Scopes, Resource: cmp.Or(o.Resource, c.URL)}, nil
}

// startMCPServers starts the manifest's MCP servers; one that cannot start is an error
// naming its manifest line.
func (h *Host) startMCPServers(ctx context.Context, version string) error {
	for i, c := range h.Manifest.MCPServers {
		var sample func(context.Context, json.RawMessage) (json.RawMessage, error)
		if c.Sampling {
			name := "mcp:" + c.Name
			sample = func(ctx context.Context, req json.RawMessage) (json.RawMessage, error) {
				return h.Door().Sample(ctx, name, req) // the one sampling path (Door.Sample)
			}
		}
		oauth, err := h.oauthOf(ctx, c)
		if err != nil {
			return h.Manifest.ErrorAt(fmt.Sprintf("mcp_servers.%d.oauth", i), "%v", err)
		}
		perUser, err := h.perUserOf(ctx, c)
		if err != nil {
			return h.Manifest.ErrorAt(fmt.Sprintf("mcp_servers.%d.auth", i), "%v", err)
		}
		srv, err := mcpclient.Start(ctx, mcpclient.Config{OAuth: oauth, PerUser: perUser, Sample: sample, Elicit: c.Elicitation, Roots: c.Roots, Notify: h.mcpNotify(c.Name), Name: c.Name, Command: c.Command, Env: c.Env, Dir: c.Cwd,
			URL: c.URL, Headers: c.Headers, Tools: c.Tools, SkipTools: c.SkipTools, Timeout: time.Duration(c.Timeout),
			MaxOutput: int64(c.MaxOutput), Version: version, Confine: h.confineSpec(c.Sandbox), ConfineExe: h.opts.ConfineExe})
		if err != nil {
			return h.Manifest.ErrorAt(fmt.Sprintf("mcp_servers.%d", i), "%v", err)
		}
		h.mcpServers = append(h.mcpServers, srv)
	}
	return nil
}

// mcpNotify reports a server's notifications through the plugins' one path (reports.go):
// in the run of the call they belong to, else to Options.OnReport.
func (h *Host) mcpNotify(name string) func(context.Context, string, json.RawMessage) {
	return func(ctx context.Context, method string, params json.RawMessage) {
		h.services.Notify(ctx, "mcp:"+name, method, params)
	}
}

// MCPServers lists the connected MCP servers, in manifest order.
func (h *Host) MCPServers() []*mcpclient.Server { return h.mcpServers }

// mcpTool is one tool of an MCP server, as the loop sees it.
type mcpTool struct {
	server *mcpclient.Server
	name   string
	tool   mcpclient.Tool
	cache  *loop.CachePolicy // the manifest's cache table's, or nil (toolcache.go)
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
