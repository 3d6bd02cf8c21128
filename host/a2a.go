package host

import (
	"os"
	"time"

	"github.com/agenthost/agenthost/a2abridge"
	"github.com/agenthost/agenthost/loop"
)

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
