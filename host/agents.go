package host

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// AgentNames lists the manifest's agents: the entry agent ([agent]) first, then the
// [agents.NAME] tables by name.
func (m *Manifest) AgentNames() []string {
	out := []string{m.Agent.Name}
	for name := range m.Agents {
		out = append(out, name)
	}
	sort.Strings(out[1:])
	return out
}

// AgentConfig returns the configuration of the agent named name.
func (m *Manifest) AgentConfig(name string) (AgentConfig, bool) {
	if name == m.Agent.Name {
		return m.Agent, true
	}
	a, ok := m.Agents[name]
	return a, ok
}

// checkAgents checks [agent] and [agents.NAME] for what several agents need: names,
// providers, hand-off targets, modes.
func (m *Manifest) checkAgents() error {
	names := m.AgentNames()
	check := func(key string, a *AgentConfig) error {
		for i, p := range a.Provider {
			if _, ok := m.Providers[p]; !ok {
				return m.errKey(key+".provider", "unknown provider %q (defined: %s)", p, strings.Join(m.providerNames(), ", "))
			}
			if slices.Contains(a.Provider[:i], p) {
				return m.errKey(key+".provider", "provider %q is twice in the fallback chain", p)
			}
		}
		for _, h := range a.Handoffs {
			if !slices.Contains(names, h) {
				return m.errKey(key+".handoffs", "no agent %q (agents: %s)", h, strings.Join(names, ", "))
			}
			if h == a.Name {
				return m.errKey(key+".handoffs", "agent %q hands off to itself", h)
			}
		}
		switch a.Mode {
		case "", "react", "plan":
		default:
			return m.errKey(key+".mode", "unknown mode %q (react or plan)", a.Mode)
		}
		for _, pk := range []struct{ key, name, kind string }{{"planner", a.Plan.Planner, "planner"}, {"evaluator", a.Plan.Evaluator, "evaluator"}} {
			if pk.name == "" || pk.name == "model" {
				continue
			}
			i := slices.IndexFunc(m.Plugins, func(p PluginConfig) bool { return p.Name == pk.name })
			if i < 0 || m.Plugins[i].Kind != pk.kind {
				return m.errKey(key+".plan."+pk.key, "%q is not a plugin of kind %s (or \"model\")", pk.name, pk.kind)
			}
		}
		if a.Plan.MaxSteps < 0 || a.Plan.MaxReplans < 0 || a.Plan.MaxParallel < 0 || a.Plan.MaxParallel > 64 {
			return m.errKey(key+".plan", "max_steps and max_replans must not be negative, max_parallel from 0 (default 4) to 64")
		}
		if a.MaxHandoffs < 0 {
			return m.errKey(key+".max_handoffs", "%d: want 0 (default 5) or more", a.MaxHandoffs)
		}
		return nil
	}
	if err := check("agent", &m.Agent); err != nil {
		return err
	}
	for _, name := range names[1:] {
		a := m.Agents[name]
		key := "agents." + name
		if a.Name != "" && a.Name != name {
			return m.errKey(key+".name", "%q differs from the table's name %q: leave it out", a.Name, name)
		}
		if name == m.Agent.Name {
			return m.errKey(key, "the entry agent ([agent]) is already named %q", name)
		}
		a.Name = name
		if err := check(key, &a); err != nil {
			return err
		}
		m.Agents[name] = a
	}
	return nil
}

// planConfig is the loop's plan configuration of a, with its planner and evaluator
// plugins.
func (h *Host) planConfig(a AgentConfig) loop.PlanConfig {
	pc := loop.PlanConfig{MaxSteps: a.Plan.MaxSteps, MaxReplans: a.Plan.MaxReplans, StepTimeout: time.Duration(a.Plan.StepTimeout), MaxParallel: a.Plan.MaxParallel}
	for i, p := range h.plugins {
		switch name := h.Manifest.Plugins[i].Name; {
		case name == a.Plan.Planner:
			pc.Planner = wasmPlanner{p}
		case name == a.Plan.Evaluator:
			pc.Evaluator = wasmEvaluator{p}
		}
	}
	return pc
}

// teamOf builds the [agents.NAME] agents and joins them with the entry agent. An agent
// without a provider uses the entry agent's model; one with only a model uses the entry
// agent's providers with that model.
func (h *Host) teamOf(entry *loop.Agent, approver loop.Approver) (*loop.Agent, error) {
	m := h.Manifest
	agents := []*loop.Agent{entry}
	for _, name := range m.AgentNames()[1:] {
		a := m.Agents[name]
		model, modelName := h.model, h.modelName
		if len(a.Provider) > 0 || a.Model != "" {
			if len(a.Provider) == 0 {
				a.Provider = m.Agent.Provider
			}
			if a.Model == "" {
				a.Model = m.Agent.Model
			}
			var err error
			if model, modelName, err = h.chainModel(context.Background(), a); err != nil {
				return nil, err
			}
		}
		ag, err := h.agentFrom(a, model, modelName, approver)
		if err != nil {
			return nil, err
		}
		agents = append(agents, ag)
	}
	if _, err := loop.NewTeam(agents...); err != nil {
		return nil, fmt.Errorf("%s: %w", m.Path, err)
	}
	return entry, nil
}

// toolsOf is the loaded tools an agent may use: all, or those its tools key names (as
// the model sees them).
func (h *Host) toolsOf(a AgentConfig) ([]loop.Tool, error) {
	if a.Tools == nil {
		return h.tools, nil
	}
	var out []loop.Tool
	var known []string
	for _, t := range h.tools {
		known = append(known, t.Spec().Name)
		if slices.Contains(a.Tools, t.Spec().Name) {
			out = append(out, t)
		}
	}
	for _, want := range a.Tools {
		if !slices.Contains(known, want) {
			key := "agent.tools"
			if a.Name != h.Manifest.Agent.Name {
				key = "agents." + a.Name + ".tools"
			}
			return nil, h.Manifest.errKey(key, "no loaded tool %q (tools: %s)", want, strings.Join(known, ", "))
		}
	}
	return out, nil
}
