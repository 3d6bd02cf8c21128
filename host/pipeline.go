package host

import (
	"context"
	"errors"

	"github.com/agenthost/agenthost/loop"
)

// buildToolAgent (re)builds the tool-only agent from the current tools: the policy
// Door.CallTool applies on a host without a provider (`mcp serve`, `plugins call`);
// after a plugin changed its tool list, `mcp serve` offers and calls the new ones.
func (h *Host) buildToolAgent() error {
	a, err := h.newAgent(noModel{}, "", h.opts.Approver) // with its team: plugins list shows its tools
	if err != nil && len(h.Manifest.Agents) > 0 {
		// A member that does not build (its tool's schema does not compile: what plugins
		// verify is there to report, per plugin) leaves this host its entry agent alone,
		// as before the team was built here: the tools are still listed, verified and
		// called, and a run (which builds the team) says the error.
		a, err = h.agentFrom(h.Manifest.Agent, noModel{}, "", h.opts.Approver)
	}
	if err == nil {
		h.toolAgent.Store(a)
	}
	return err
}

// errNoModel is what the tool-only agent's model answers: nothing on that path calls
// it, and if something ever did, it fails clearly instead of silently.
var errNoModel = errors.New("no provider is started: this command calls tools only")

type noModel struct{}

func (noModel) Stream(context.Context, loop.Request) (loop.Stream, error) {
	return nil, &loop.ModelError{Kind: loop.KindInvalidRequest, Message: errNoModel.Error()}
}
