package manifest

import (
	"slices"
	"sort"
	"strings"

	"github.com/agenthost/agenthost/workflow"
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
	if err := m.checkAgent("agent", &m.Agent, names); err != nil {
		return err
	}
	for _, name := range names[1:] {
		a := m.Agents[name]
		key := "agents." + name
		if a.Name != "" && a.Name != name {
			return m.ErrorAt(key+".name", "%q differs from the table's name %q: leave it out", a.Name, name)
		}
		if name == m.Agent.Name {
			return m.ErrorAt(key, "the entry agent ([agent]) is already named %q", name)
		}
		a.Name = name
		if err := m.checkAgent(key, &a, names); err != nil {
			return err
		}
		if err := m.checkMerge(key, a); err != nil {
			return err
		}
		m.Agents[name] = a
	}
	return nil
}

// checkAgent checks one agent's table at key; names are all the agents'.
func (m *Manifest) checkAgent(key string, a *AgentConfig, names []string) error {
	if err := m.checkProviderChain(key, a); err != nil {
		return err
	}
	for _, h := range a.Handoffs {
		if !slices.Contains(names, h) {
			return m.ErrorAt(key+".handoffs", "no agent %q (agents: %s)", h, strings.Join(names, ", "))
		}
		if h == a.Name {
			return m.ErrorAt(key+".handoffs", "agent %q hands off to itself", h)
		}
	}
	switch a.Mode {
	case "", "react", "plan":
	default:
		return m.ErrorAt(key+".mode", "unknown mode %q (react or plan)", a.Mode)
	}
	if a.Merge != nil && key == "agent" {
		return m.ErrorAt("agent.merge", "merge is for an [agents.NAME] agent, not the entry agent")
	}
	if err := m.checkPlan(key, a.Plan); err != nil {
		return err
	}
	if a.MaxHandoffs < 0 {
		return m.ErrorAt(key+".max_handoffs", "%d: want 0 (default 5) or more", a.MaxHandoffs)
	}
	return nil
}

// checkProviderChain checks an agent's provider: each name is a [providers.NAME] table,
// and none is twice in its fallback chain.
func (m *Manifest) checkProviderChain(key string, a *AgentConfig) error {
	for i, p := range a.Provider {
		if _, ok := m.Providers[p]; !ok {
			return m.ErrorAt(key+".provider", "unknown provider %q (defined: %s)", p, strings.Join(m.ProviderNames(), ", "))
		}
		if slices.Contains(a.Provider[:i], p) {
			return m.ErrorAt(key+".provider", "provider %q is twice in the fallback chain", p)
		}
	}
	return nil
}

// checkPlan checks an agent's plan table: its planner and evaluator are "model" or
// plugins of that kind, its bounds are sane.
func (m *Manifest) checkPlan(key string, p PlanConfig) error {
	for _, pk := range []struct{ key, name, kind string }{{"planner", p.Planner, "planner"}, {"evaluator", p.Evaluator, "evaluator"}} {
		if pk.name == "" || pk.name == "model" {
			continue
		}
		i := slices.IndexFunc(m.Plugins, func(p PluginConfig) bool { return p.Name == pk.name })
		if i < 0 || m.Plugins[i].Kind != pk.kind {
			return m.ErrorAt(key+".plan."+pk.key, "%q is not a plugin of kind %s (or \"model\")", pk.name, pk.kind)
		}
	}
	if p.MaxSteps < 0 || p.MaxReplans < 0 || p.MaxParallel < 0 || p.MaxParallel > 64 {
		return m.ErrorAt(key+".plan", "max_steps and max_replans must not be negative, max_parallel from 0 (default 4) to 64")
	}
	return nil
}

// MergeConfig is [agents.NAME] merge = { agents = [...], by = "...", judge = "..." }: a run
// of the agent asks each listed agent the run's question and answers with their answers
// merged (workflow.Merge): by "concat" (the default), "vote" or "judge" (the judge agent
// merges). The agent's own model is not called.
type MergeConfig struct {
	Agents []string `toml:"agents"`
	By     string   `toml:"by"`
	Judge  string   `toml:"judge"`
}

// checkMerge checks an [agents.NAME] merge table: at least two agents, each an agent of
// the manifest named once, neither the agent itself nor one that merges (a merge asks
// answering agents, so merges never nest into a cycle); by one of the merge kinds; judge
// with by = "judge" only, an answering agent as well.
func (m *Manifest) checkMerge(key string, a AgentConfig) error {
	mc := a.Merge
	if mc == nil {
		return nil
	}
	key += ".merge"
	if len(a.Provider) > 0 || a.Model != "" {
		return m.ErrorAt(key, "a merge agent calls no model of its own: leave provider and model out")
	}
	if len(mc.Agents) < 2 {
		return m.ErrorAt(key+".agents", "a merge asks several agents: name at least two")
	}
	answering := func(k, n string) error {
		switch other, ok := m.AgentConfig(n); {
		case !ok:
			return m.ErrorAt(k, "no agent %q (agents: %s)", n, strings.Join(m.AgentNames(), ", "))
		case n == a.Name:
			return m.ErrorAt(k, "agent %q merges its own answer", n)
		case other.Merge != nil:
			return m.ErrorAt(k, "agent %q merges too: a merge asks agents that answer themselves", n)
		}
		return nil
	}
	for i, n := range mc.Agents {
		if slices.Contains(mc.Agents[:i], n) {
			return m.ErrorAt(key+".agents", "agent %q: each agent is named once", n)
		}
		if err := answering(key+".agents", n); err != nil {
			return err
		}
	}
	switch {
	case !slices.Contains(workflow.MergeKinds(), mc.By):
		return m.ErrorAt(key+".by", "%q: want concat, vote or judge", mc.By)
	case (mc.By == "judge") != (mc.Judge != ""):
		return m.ErrorAt(key+".judge", `by = "judge" and judge = "AGENT" go together`)
	case mc.Judge != "":
		return answering(key+".judge", mc.Judge)
	}
	return nil
}
