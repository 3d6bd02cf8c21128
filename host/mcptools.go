package host

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"github.com/agenthost/agenthost/host/confine"
	"net/url"
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
	// Sampling lets the server ask the agent's model (MCP sampling) during a tool call,
	// charged to the calling run; its calls then run one at a time (mcpclient/sampling.go).
	Sampling bool `toml:"sampling"`
	// Elicitation lets the server ask the user for a form's fields during a tool call,
	// through the run's approval path (mcpclient/elicit.go).
	Elicitation bool `toml:"elicitation"`
	// Roots are directories announced to the server as its MCP roots (relative to the
	// manifest); announcing is not confining: sandbox does that.
	Roots []string `toml:"roots"`
	// OAuth gets a remote server's bearer token with the client credentials grant.
	OAuth *MCPOAuthConfig `toml:"oauth"`
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
	if o := s.OAuth; o != nil && (s.URL == "" || o.TokenURL == "" || o.ClientID == "" || (o.ClientSecretEnv == "" && o.AuthorizeURL == "")) {
		return m.errKey(key+".oauth", "oauth needs a url entry and token_url, client_id, and authorize_url (a person signs in) or client_secret_env (client credentials)")
	}
	if o := s.OAuth; o != nil {
		for k, u := range map[string]string{"token_url": o.TokenURL, "authorize_url": o.AuthorizeURL} {
			if pu, err := url.Parse(u); u != "" && (err != nil || (pu.Scheme != "https" && !(pu.Scheme == "http" && isLoopback(pu.Hostname())))) {
				return m.errKey(key+".oauth."+k, "%q must be https (or http on loopback)", u)
			}
		}
	}
	for j := range s.Roots {
		s.Roots[j] = m.resolve(s.Roots[j])
	}
	if sb := s.Sandbox; sb != nil {
		if len(s.Command) == 0 {
			return m.errKey(key+".sandbox", "sandbox confines a command; mcp server %q has a url", s.Name)
		}
		m.resolveSandbox(sb)
	}
	return nil
}

func isLoopback(h string) bool { return h == "localhost" || h == "127.0.0.1" || h == "::1" }

// MCPOAuthConfig is an [[mcp_servers]] entry's oauth table: a machine identity at the
// server's authorization server. The secret is named by an environment variable, never
// written in the manifest.
type MCPOAuthConfig struct {
	// AuthorizeURL, when set, makes it the authorization code grant with PKCE: a person
	// signs in with `agenthost mcp login NAME` (mcplogin.go); else client credentials.
	AuthorizeURL    string   `toml:"authorize_url"`
	TokenURL        string   `toml:"token_url"`
	ClientID        string   `toml:"client_id"`
	ClientSecretEnv string   `toml:"client_secret_env"`
	Scopes          []string `toml:"scopes"`
	Resource        string   `toml:"resource"` // default: the server's url
}

// oauthOf is the entry's OAuth: the token `mcp login` stored, or client credentials
// with the secret read from its variable.
func (h *Host) oauthOf(ctx context.Context, c MCPServerConfig) (*mcpclient.OAuth, error) {
	o := c.OAuth
	if o == nil {
		return nil, nil
	}
	if o.authCode() {
		src, err := h.storedTokenSource(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("oauth: %w", err)
		}
		return &mcpclient.OAuth{TokenURL: o.TokenURL, Source: src}, nil
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
				return h.services.CreateMessage(ctx, name, req) // the one create_message path (ledger, budgets)
			}
		}
		oauth, err := h.oauthOf(ctx, c)
		if err != nil {
			return h.Manifest.errKey(fmt.Sprintf("mcp_servers.%d.oauth", i), "%v", err)
		}
		srv, err := mcpclient.Start(ctx, mcpclient.Config{OAuth: oauth, Sample: sample, Elicit: c.Elicitation, Roots: c.Roots, Notify: h.mcpNotify(c.Name), Name: c.Name, Command: c.Command, Env: c.Env, Dir: c.Cwd,
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
