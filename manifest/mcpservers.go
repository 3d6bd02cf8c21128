package manifest

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/agenthost/agenthost/confine"
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
	Cache           *CacheConfig      `toml:"cache"`            // its tools whose results may be reused (cache.go)
	// Sandbox confines a command's process (confine): the paths it may read and
	// write (relative to the manifest) and whether it may use the network (default: no).
	// After checking, a command entry's Sandbox is its whole confinement, defaults
	// included (sandbox.go), or nil when Confine is off.
	Sandbox *confine.Spec `toml:"sandbox"`
	// Confine is confine = true (the default), false or "required" (sandbox.go).
	Confine Confine `toml:"confine"`
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
	// Auth is whose token reaches the server: "host" (default: one for the whole host)
	// or "per_user", each calling user's own (usercreds.go).
	Auth string `toml:"auth"`
	// Prepare makes the server ready before each run that offers its tools: started
	// again if it died, and pinged (loop.Runtime; runtime.go).
	Prepare bool `toml:"prepare"`
}

// checkMCPServer validates entry i and expands its values.
func (m *Manifest) checkMCPServer(i int, names map[string]int) error {
	s := &m.MCPServers[i]
	key := fmt.Sprintf("mcp_servers.%d", i)
	switch {
	case s.Name == "":
		return m.ErrorAt(key, "mcp server has no name")
	case (len(s.Command) == 0) == (s.URL == ""):
		return m.ErrorAt(key, "mcp server %q needs exactly one of command and url", s.Name)
	}
	if j, dup := names[s.Name]; dup {
		return m.ErrorAt(key+".name", "name %q is taken (plugins or mcp_servers %d)", s.Name, j)
	}
	names[s.Name] = i
	cwd := s.Cwd
	if err := m.resolveMCPServer(key, s); err != nil {
		return err
	}
	if err := m.checkMCPOAuth(key, s); err != nil {
		return err
	}
	if err := m.checkMCPAuth(key, s); err != nil {
		return err
	}
	if len(s.Command) == 0 {
		if s.Sandbox != nil || s.Confine != ConfineOn {
			return m.ErrorAt(key+".sandbox", "sandbox and confine confine a command; mcp server %q has a url", s.Name)
		}
		return nil
	}
	if cwd != "" {
		cwd = s.Cwd // an explicit working directory is readable; the manifest's is not
	}
	sb, err := m.commandSandbox(key, s.Confine, s.Sandbox, cwd, s.Cwd, s.Command[1:], false)
	s.Sandbox = sb
	return err
}

// resolveMCPServer expands an entry's url and headers and makes its paths absolute: its
// working directory (default: the manifest's) and its roots, both inside the manifest's
// directory unless allow_outside_paths (paths.go), and a command given as a path.
func (m *Manifest) resolveMCPServer(key string, s *MCPServerConfig) error {
	s.URL = os.ExpandEnv(s.URL)
	for k, v := range s.Headers {
		s.Headers[k] = os.ExpandEnv(v)
	}
	if s.Cwd == "" {
		s.Cwd = m.Dir
	} else if cwd, err := m.inside(key+".cwd", s.Cwd); err != nil {
		return err
	} else {
		s.Cwd = cwd
	}
	if len(s.Command) > 0 && filepath.Base(s.Command[0]) != s.Command[0] {
		s.Command[0] = m.Resolve(s.Command[0])
	}
	for j := range s.Roots {
		r, err := m.inside(fmt.Sprintf("%s.roots.%d", key, j), s.Roots[j])
		if err != nil {
			return err
		}
		s.Roots[j] = r
	}
	return nil
}

// checkMCPOAuth checks an entry's oauth table: complete for one of its two grants, on a
// url entry, its endpoints https (or http on loopback).
func (m *Manifest) checkMCPOAuth(key string, s *MCPServerConfig) error {
	o := s.OAuth
	if o == nil {
		return nil
	}
	switch {
	case s.URL == "":
		return m.ErrorAt(key+".oauth", "oauth needs a url entry")
	case o.Discover() && o.ClientSecretEnv != "" && o.ClientID == "":
		return m.ErrorAt(key+".oauth.client_secret_env", "a client secret needs its client_id")
	case o.Discover():
	case o.TokenURL == "" || o.ClientID == "" || (o.ClientSecretEnv == "" && o.AuthorizeURL == ""):
		return m.ErrorAt(key+".oauth", "oauth needs token_url, client_id, and authorize_url (a person signs in) or client_secret_env "+
			"(client credentials); or neither URL, and the server's authorization server is discovered (a person signs in)")
	}
	for _, e := range [][2]string{{"token_url", o.TokenURL}, {"authorize_url", o.AuthorizeURL}} {
		if err := checkEndpoint(m, key+".oauth."+e[0], e[1]); err != nil {
			return err
		}
	}
	return nil
}

// checkEndpoint refuses an OAuth endpoint that is neither https nor http on loopback.
func checkEndpoint(m *Manifest, key, u string) error {
	if pu, err := url.Parse(u); u != "" && (err != nil || (pu.Scheme != "https" && !(pu.Scheme == "http" && isLoopback(pu.Hostname())))) {
		return m.ErrorAt(key, "%q must be https (or http on loopback)", u)
	}
	return nil
}

func isLoopback(h string) bool { return h == "localhost" || h == "127.0.0.1" || h == "::1" }

// MCPOAuthConfig is an [[mcp_servers]] entry's oauth table: a person's sign-in or a
// machine identity at the server's authorization server. The secret is named by an environment variable, never
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
	// RedirectURL is where the authorization server sends a user back after signing in
	// through the served host (auth = "per_user"): the server's /v1/mcp/oauth/callback
	// as the authorization server knows it; default: derived from the connect request.
	RedirectURL string `toml:"redirect_url"`
}

// AuthCode is whether the entry's OAuth is the authorization code grant (a person signs
// in with `agenthost mcp login NAME`) rather than client credentials.
func (o *MCPOAuthConfig) AuthCode() bool { return o != nil && (o.AuthorizeURL != "" || o.Discover()) }

// Discover is whether the entry names neither endpoint: `mcp login` discovers them as the
// MCP authorization spec says (the server's protected resource metadata, then its
// authorization server's metadata) and registers the client when client_id is not a
// pre-registered one (a client ID metadata document when client_id is an https URL and
// the server supports them, else dynamic registration). A pre-registered client with a
// secret at an authorization server that takes only client credentials gets its token
// with that grant instead (mcpclient's machine.go).
func (o *MCPOAuthConfig) Discover() bool { return o != nil && o.AuthorizeURL == "" && o.TokenURL == "" }
