package manifest

import (
	"math"
	"regexp"
	"slices"
	"sort"
	"sync"
	"time"
)

// ToolGroupConfig is a [tool_groups.NAME] table: tools that do the same thing with the
// same arguments, offered to the model as one tool NAME; each call runs on the member
// the loop chooses, the cheapest by its [tools.NAME] cost first, the others standing in
// when it fails (docs/loop.md, "Tool groups"). That each member is a loaded tool with
// the same input schema as the others is the host's to check.
type ToolGroupConfig struct {
	Tools       []string `toml:"tools"`
	Description string   `toml:"description"` // "": the first member's
	// Measure is a window ("168h"): when set, the host measures each member's success
	// rate and mean latency from its calls in the runs stored over that window, when the
	// agent is built, and the choice weighs them beside the cost (docs/loop.md, "Tool
	// groups"). 0: by declared cost alone.
	Measure Duration `toml:"measure"`
	// Refresh is how often, at most, the measured values are read again while the agent
	// lives (a long-running serve): at the first call of the group after it passed, in
	// the background, the call and those after it using the values they have until the
	// new ones are read. 0: DefaultGroupRefresh. Only with measure.
	Refresh Duration `toml:"refresh"`
}

// DefaultGroupRefresh is a measured tool group's refresh when it sets none.
const DefaultGroupRefresh = 15 * time.Minute

// toolName is a name a model may call (the OpenAI-compatible function name rule).
var toolName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })

// checkToolGroups checks the [tool_groups.NAME] tables and the tools' costs.
func (m *Manifest) checkToolGroups() error {
	for _, n := range sortedKeys(m.Tools) {
		if c := m.Tools[n].Cost; c < 0 || math.IsInf(c, 0) || math.IsNaN(c) {
			return m.ErrorAt("tools."+n+".cost", "cost %v: want a number >= 0 (a call's declared cost; the lower is chosen first in a tool group)", c)
		}
	}
	member := map[string]string{}
	for _, n := range sortedKeys(m.ToolGroups) {
		g, key := m.ToolGroups[n], "tool_groups."+n
		switch {
		case !toolName().MatchString(n):
			return m.ErrorAt(key, "group name %q: the model calls it, so 1 to 64 of letters, digits, _ and -", n)
		case len(g.Tools) < 2:
			return m.ErrorAt(key+".tools", "a group needs at least two tools (a group of one is that tool)")
		case g.Refresh != 0 && g.Measure == 0:
			return m.ErrorAt(key+".refresh", "refresh re-reads measured values: it goes with measure")
		case g.Refresh != 0 && time.Duration(g.Refresh) < time.Second:
			return m.ErrorAt(key+".refresh", "refresh %s: want at least 1s (each refresh reads the stored runs of the window)", time.Duration(g.Refresh))
		}
		if _, ok := m.Tools[n]; ok {
			return m.ErrorAt(key, "%q is a group and has a [tools.%s] table: a group is not a tool of its own", n, n)
		}
		for i, t := range g.Tools {
			switch {
			case t == "":
				return m.ErrorAt(key+".tools", "a group's tool needs a name")
			case slices.Contains(g.Tools[:i], t):
				return m.ErrorAt(key+".tools", "tool %q is listed twice", t)
			case member[t] != "":
				return m.ErrorAt(key+".tools", "tool %q is already in group %q: a tool is in one group at most", t, member[t])
			case m.ToolGroups[t].Tools != nil:
				return m.ErrorAt(key+".tools", "%q is a group: groups do not nest", t)
			}
			member[t] = n
		}
	}
	return nil
}

// sortedKeys are a map's keys in order (checks report the first problem by name).
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
