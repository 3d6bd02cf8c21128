package host

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/mcpclient"
)

// runtimes is the loop's Config.Runtimes for an agent whose tools are own (docs/loop.md,
// "Tool runtimes"): each tool plugin whose entry says prepare = true has its prepare
// export called, on the run's session's instance, with {"init": RunInput.RuntimeInit
// for it, "hints": the run's hints} (a plugin without the export is refused, at the
// key); each MCP server whose entry says so is made ready (started again if it died,
// then pinged: mcpclient.Server.Ready), taking no init data (MCP has no request for
// it). A runtime none of whose tools the agent has is left out.
func (h *Host) runtimes(own []loop.Tool) ([]loop.Runtime, error) {
	var out []loop.Runtime
	for i, c := range h.Manifest.Plugins {
		if !c.Prepare || i >= len(h.plugins) {
			continue
		}
		p := h.plugins[i]
		if !hasExport(p, "prepare") {
			return nil, h.Manifest.ErrorAt(fmt.Sprintf("plugins.%d.prepare", i), "plugin %q exports no prepare function to call before a run", c.Name)
		}
		var names []string
		for _, t := range own {
			if pt, ok := t.(*pluginTool); ok && pt.plugin == p {
				names = append(names, pt.name)
			}
		}
		if len(names) > 0 {
			out = append(out, loop.Runtime{Name: c.Name, Tools: names, Prepare: func(ctx context.Context, init json.RawMessage) error {
				in, err := json.Marshal(prepareInput{Init: init, Hints: loop.RuntimeHints(ctx)})
				if err != nil {
					return err
				}
				_, err = p.CallExport(withSession(ctx), "prepare", in)
				return err
			}})
		}
	}
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
	return out, nil
}

// prepareInput is what a plugin's prepare export gets (plugins/sdk/ABI.md).
type prepareInput struct {
	Init  json.RawMessage   `json:"init,omitempty"`
	Hints map[string]string `json:"hints,omitempty"`
}
