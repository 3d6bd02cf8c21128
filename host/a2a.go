package host

import (
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/agenthost/agenthost/host/a2abridge"
	"github.com/agenthost/agenthost/loop"
)

// A2AAgentConfig is one [[a2a_agents]] entry: a remote agent the agent may call over A2A
// as the tool a2a_NAME (host/a2abridge).
type A2AAgentConfig struct {
	Name        string   `toml:"name"`
	URL         string   `toml:"url"`       // the remote agent's A2A JSON-RPC endpoint
	TokenEnv    string   `toml:"token_env"` // the variable holding its bearer token
	Description string   `toml:"description"`
	Timeout     Duration `toml:"timeout"`    // one call; default 2m
	MaxOutput   Size     `toml:"max_output"` // the answer's bound; default 1MiB
}

var a2aName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,48}$`)

func (m *Manifest) checkA2A() error {
	seen := map[string]bool{}
	for i, a := range m.A2AAgents {
		key := fmt.Sprintf("a2a_agents[%d]", i)
		switch {
		case !a2aName.MatchString(a.Name):
			return m.errKey(key+".name", "name %q: 1-48 letters, digits, _ or -", a.Name)
		case seen[a.Name]:
			return m.errKey(key+".name", "duplicate A2A agent %q", a.Name)
		}
		seen[a.Name] = true
		if err := a2abridge.CheckURL(a.URL); err != nil {
			return m.errKey(key+".url", "%v", err)
		}
		if a.TokenEnv != "" && os.Getenv(a.TokenEnv) == "" {
			return m.errKey(key+".token_env", "%s is not set", a.TokenEnv)
		}
	}
	return nil
}

// a2aTools are the [[a2a_agents]] as tools.
func (h *Host) a2aTools() []loop.Tool {
	var out []loop.Tool
	for _, a := range h.Manifest.A2AAgents {
		out = append(out, a2aTool{a2abridge.NewTool(a2abridge.Remote{Name: a.Name, URL: a.URL, Token: os.Getenv(a.TokenEnv),
			Description: a.Description, Timeout: time.Duration(a.Timeout), MaxOutput: int64(a.MaxOutput)}), a.Name})
	}
	return out
}

// a2aTool is a remote agent's tool with the names the host's tool listing needs.
type a2aTool struct {
	*a2abridge.Tool
	agent string
}

func (t a2aTool) owner() string     { return "a2a:" + t.agent }
func (t a2aTool) ownName() string   { return a2abridge.ToolName(t.agent) }
func (t a2aTool) modelName() string { return a2abridge.ToolName(t.agent) }
