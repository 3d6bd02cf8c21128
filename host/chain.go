package host

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
	"github.com/agenthost/agenthost/providers"
	"github.com/agenthost/agenthost/telemetry"
)

// chainModel builds an agent's model: its provider, or its fallback chain of providers
// (--provider replaces it), each started once per host and shared by the agents that
// name it. The name returned is the first provider's model, for events.
func (h *Host) chainModel(ctx context.Context, a manifest.AgentConfig) (loop.Model, string, error) {
	m := h.Manifest
	chain := []string(a.Provider)
	if h.opts.Provider != "" {
		chain = []string{h.opts.Provider}
	}
	if len(chain) == 0 { // only a run needs one: plugins and sessions commands do not
		if a.Name != m.Agent.Name {
			return nil, "", m.ErrorAt("agents."+a.Name, "no provider: set provider here or in [agent]")
		}
		return nil, "", m.ErrorAt("agent", "no provider: set agent.provider to one of the [providers.NAME] tables")
	}
	cm := &chainModel{retry: withRetryDefaults(loop.RetryPolicy{MaxAttempts: a.Retry.MaxAttempts,
		BaseDelay: time.Duration(a.Retry.BaseDelay), MaxDelay: time.Duration(a.Retry.MaxDelay)}), sleep: sleepCtx}
	var modelName string
	for _, name := range chain {
		pc, ok := m.Providers[name]
		if !ok {
			return nil, "", fmt.Errorf("%s: --provider %q: no [providers.%s] in the manifest", m.Path, name, name)
		}
		client, err := h.client(ctx, name, pc) // first: a missing key is the first thing to say
		if err != nil {
			return nil, "", err
		}
		if pc.Model == "" && len(pc.ModelUnset) > 0 {
			// agent.model is meant for another provider (agent.toml's "demo" is the
			// scripted one's): sending it to a real server would fail there, or worse, not.
			return nil, "", m.ErrorAt("providers."+name+".model", "%s is not set: export it (the model to ask, e.g. gpt-4o-mini, "+
				"or llama3.2 on Ollama) or use --provider scripted", strings.Join(pc.ModelUnset, ", "))
		}
		linkModel := a.Model
		if pc.Model != "" {
			linkModel = pc.Model
		}
		if modelName == "" {
			modelName = linkModel // the first provider's, for events and create_message
		}
		var lm loop.Model = &providerModel{client: client, model: linkModel}
		if h.tel != nil {
			lm = telemetry.WrapModel(lm, name, linkModel)
		}
		l := &link{name: name, model: lm,
			breaker: newBreaker(name, pc.BreakerFailures, time.Duration(pc.BreakerCooldown)),
			limits:  newLimiter(pc.RequestsPerMinute, pc.TokensPerMinute)}
		l.pricing = linkPricing(pc, a.Pricing, linkModel)
		cm.links = append(cm.links, l)
	}
	return cm, modelName, nil
}

// client starts the provider name once.
func (h *Host) client(ctx context.Context, name string, pc manifest.ProviderConfig) (*providers.Client, error) {
	if c, ok := h.clients[name]; ok {
		return c, nil
	}
	c, err := providers.Start(ctx, providers.ClientConfig{
		Name: name, Command: pc.Command, Args: pc.Args, Env: pc.Env, SHA256: pc.SHA256,
		StartTimeout: time.Duration(pc.StartTimeout), Options: providerOptions(h.Manifest, name, pc), Stderr: h.opts.Stderr,
		FirstTokenTimeout: callTimeout(pc.FirstTokenTimeout), IdleTimeout: callTimeout(pc.IdleTimeout),
		Confine: h.confineSpec(pc.Sandbox), ConfineExe: h.opts.ConfineExe,
	})
	if err != nil {
		return nil, err
	}
	if h.clients == nil {
		h.clients = map[string]*providers.Client{}
	}
	h.clients[name] = c
	h.providers = append(h.providers, c)
	return c, nil
}

// callTimeout maps a manifest timeout onto providers.ClientConfig's convention:
// unset is 0 (the default), an explicit 0 is negative (off).
func callTimeout(d *manifest.Duration) time.Duration {
	switch {
	case d == nil:
		return 0
	case *d == 0:
		return -1
	}
	return time.Duration(*d)
}
