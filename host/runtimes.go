package host

import (
	"context"
	"encoding/json"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/mcpclient"
)

// runtimes is the loop's Config.Runtimes for an agent whose tools are own: each MCP
// server whose entry says prepare = true is made ready (started again if it died, then
// pinged: mcpclient.Server.Ready) before every run that offers one of its tools; if it
// is not, its tools are unavailable for that run and their calls fail with the reason
// (docs/loop.md, "Tool runtimes"). An MCP server takes no init data (MCP has no request
// for it): RunInput.RuntimeInit for it is ignored.
func (h *Host) runtimes(own []loop.Tool) []loop.Runtime {
	var out []loop.Runtime
	for _, c := range h.Manifest.MCPServers {
		if !c.Prepare {
			continue
		}
		var names []string
		var srv *mcpclient.Server
		for _, t := range own {
			if mt, ok := t.(*mcpTool); ok && mt.server.Name() == c.Name {
				names, srv = append(names, mt.name), mt.server
			}
		}
		if srv == nil { // the agent has none of its tools
			continue
		}
		out = append(out, loop.Runtime{Name: c.Name, Tools: names, Prepare: func(ctx context.Context, _ json.RawMessage) error {
			return srv.Ready(ctx)
		}})
	}
	return out
}
