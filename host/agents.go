package host

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
)

// plugins.
func (h *Host) planConfig(a manifest.AgentConfig) loop.PlanConfig {
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
// agent's providers with that model. On the tool-only agent (noModel: no provider is
// started) every member gets noModel too: the team is built for its tools (the hand-off
// and ask_ tools plugins list shows, loop.Agent.TeamTools), and starts no provider.
func (h *Host) teamOf(entry *loop.Agent, entryModel loop.Model, entryName string, approver loop.Approver) (*loop.Agent, error) {
	m := h.Manifest
	agents := []*loop.Agent{entry}
	members := map[string]*loop.Agent{m.Agent.Name: entry}
	var merges []*mergeModel
	_, toolOnly := entryModel.(noModel)
	for _, name := range m.AgentNames()[1:] {
		a := m.Agents[name]
		model, modelName := entryModel, entryName
		if a.Merge != nil && !toolOnly {
			mm := newMergeModel(a.Merge)
			merges = append(merges, mm)
			model, modelName = mm, "merge"
		} else if (len(a.Provider) > 0 || a.Model != "") && !toolOnly {
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
		members[name] = ag
	}
	for _, mm := range merges {
		mm.members = members
	}
	if _, err := loop.NewTeam(agents...); err != nil {
		return nil, fmt.Errorf("%s: %w", m.Path, err)
	}
	return entry, nil
}

// toolsOf is the loaded tools an agent may use: all, or those its tools key names (as
// the model sees them).
func (h *Host) toolsOf(a manifest.AgentConfig) ([]loop.Tool, error) {
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
			return nil, h.Manifest.ErrorAt(key, "no loaded tool %q (tools: %s)", want, strings.Join(known, ", "))
		}
	}
	return out, nil
}
