package host

import (
	"cmp"
	"context"
	"sort"
	"time"

	"github.com/agenthost/agenthost/insights"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
)

// wireToolChoices gives an agent whose tools are own what the manifest declares about
// which tool a call runs on: fallbacks, groups and runtimes.
func (h *Host) wireToolChoices(cfg *loop.Config, own []loop.Tool) (err error) {
	if cfg.ToolFallbacks, err = h.toolFallbacks(own); err != nil {
		return err
	}
	if cfg.ToolGroups, err = h.toolGroups(own, cfg.ToolFallbacks); err != nil {
		return err
	}
	cfg.Runtimes, err = h.runtimes(own)
	return err
}

// toolGroups is the loop's Config.ToolGroups for an agent whose tools are own, from the
// [tool_groups.NAME] tables (docs/loop.md, "Tool groups"): each group's members the
// agent has, with their [tools.NAME] cost and, with measure, their success rate and
// latency in stored runs (toolmeasure.go), refreshed while the agent lives
// (grouprefresh.go). A member must be a loaded tool, the group's
// name must not be one, the members the agent has must take the same input schema (a
// call of the group runs on any of them with the same arguments), and a member keeps no
// fallback list of its own (its group's other members are its fallbacks). Otherwise the
// agent is not built and the error names the key. A group the agent has none of is not
// offered.
func (h *Host) toolGroups(own []loop.Tool, fallbacks map[string][]loop.ToolFallback) ([]loop.ToolGroup, error) {
	loaded := map[string]loop.ToolSpec{}
	for _, ts := range [][]loop.Tool{h.tools, own} {
		for _, t := range ts {
			loaded[t.Spec().Name] = t.Spec()
		}
	}
	mine := map[string]bool{}
	for _, t := range own {
		mine[t.Spec().Name] = true
	}
	names := make([]string, 0, len(h.Manifest.ToolGroups))
	for n := range h.Manifest.ToolGroups {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []loop.ToolGroup
	reports := map[time.Duration]*insights.Report{}
	for _, n := range names {
		c, key := h.Manifest.ToolGroups[n], "tool_groups."+n
		if _, ok := loaded[n]; ok {
			return nil, h.Manifest.ErrorAt(key, "%q is already a loaded tool's name: a group needs a name of its own", n)
		}
		g := loop.ToolGroup{Name: n, Description: c.Description}
		var first string
		for _, t := range c.Tools {
			spec, ok := loaded[t]
			switch {
			case !ok:
				return nil, h.Manifest.ErrorAt(key+".tools", "no loaded tool %q", t)
			case fallbacks[t] != nil:
				return nil, h.Manifest.ErrorAt(key+".tools", "tool %q has a fallback list: in a group its fallbacks are the group's other members", t)
			case !mine[t]:
				continue
			case first != "" && !sameSchema(loaded[first].InputSchema, spec.InputSchema):
				return nil, h.Manifest.ErrorAt(key+".tools", "%q takes other arguments than %q (its input_schema differs): a group's tools take the same arguments", t, first)
			}
			if first == "" {
				first = t
			}
			g.Members = append(g.Members, loop.GroupMember{Tool: t, Cost: h.Manifest.Tools[t].Cost})
		}
		if len(g.Members) == 0 {
			continue
		}
		if c.Measure > 0 {
			if err := h.measureMembers(context.Background(), &g, time.Duration(c.Measure), reports); err != nil {
				return nil, err
			}
			every := cmp.Or(time.Duration(c.Refresh), manifest.DefaultGroupRefresh)
			g.Measure = newGroupMeasure(h, g, time.Duration(c.Measure), every).current // refreshed while the agent lives (grouprefresh.go)
		}
		out = append(out, g)
	}
	return out, nil
}
