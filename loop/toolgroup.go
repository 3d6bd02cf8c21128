package loop

import (
	"cmp"
	"math"
	"slices"
)

// Tool groups (Config.ToolGroups; [tool_groups.NAME] in the manifest). Tools that do
// the same thing with the same arguments — two search services, a paid API and a local
// index — may be declared a group: the model is offered one tool, the group's name (at
// the place of its first offered member, with the group's description, else the first
// member's, and the first member's input schema), instead of the members. A call of it
// is made on the member the loop chooses among the run's offered members (chooseMembers):
// the lowest expected cost of a success — declared cost over the success rate measured
// in stored runs, when the host measured one — then the higher success rate, then the
// lower mean latency, declared order breaking ties; those that already failed in this run
// put last and those whose runtime is down (runtime.go) left out. The call then runs as
// a call of that member through the whole pipeline (rule L22: its approvals, caps by
// the group's name as the model called it, guardrails, cache), and if it fails the
// other members stand in, in the same order, as its fallbacks (fallback.go) with the
// same arguments. Its tool_result names the member that ran (name) and the group
// (group); a member that stood in is named by fallback as for any fallback. The model calls a
// member only through its group: it does not see it, and a call naming it is an unknown
// tool. A direct call (Agent.DirectCall: a person's or a workflow's) may name a member.

// ToolGroup is a set of equivalent tools offered to the model as one.
type ToolGroup struct {
	Name        string
	Description string // "": the first member's
	Members     []GroupMember
	// Measure, when set, returns the members with their current measurements (the same
	// tools as Members, in the same order) for each choice, so values measured while the
	// agent lives take effect (the host re-reads them from stored runs). It must not
	// block: it returns the values it has. nil: Members as they are.
	Measure func() []GroupMember
}

// GroupMember is a tool of a group and its declared cost per call (any unit, the same
// for the group's members; lower is chosen first).
type GroupMember struct {
	Tool string
	Cost float64
	// Measured says SuccessRate (0 to 1) and MeanMS (its mean duration) were measured
	// from the tool's calls in stored runs; unmeasured, a member counts as always
	// succeeding, at no known latency.
	Measured    bool
	SuccessRate float64
	MeanMS      float64
}

// rate is m's success rate: measured, or 1.
func (m GroupMember) rate() float64 {
	if m.Measured {
		return m.SuccessRate
	}
	return 1
}

// perSuccess is m's expected cost of a successful call: its cost over its success rate
// (+Inf when it never succeeds).
func (m GroupMember) perSuccess() float64 {
	if m.rate() <= 0 {
		return math.Inf(1)
	}
	return m.Cost / m.rate()
}

// compareMembers orders two members of a group for a call (see the package comment
// above ToolGroup): expected cost of a success, success rate, mean latency when both
// are measured.
func compareMembers(a, b GroupMember) int {
	if c := cmp.Compare(a.perSuccess(), b.perSuccess()); c != 0 {
		return c
	}
	if c := cmp.Compare(b.rate(), a.rate()); c != 0 {
		return c
	}
	if a.Measured && b.Measured {
		return cmp.Compare(a.MeanMS, b.MeanMS)
	}
	return 0
}

// groupOffered replaces, in offered, the members of each group by the group's spec, at
// its first member's place; a group none of whose members is offered is not offered.
func (r *run) groupOffered(offered []ToolSpec) []ToolSpec {
	if len(r.cfg.ToolGroups) == 0 || len(offered) == 0 {
		return offered
	}
	out := make([]ToolSpec, 0, len(offered))
	for _, s := range offered {
		g := r.groupOf(s.Name)
		switch {
		case g == nil:
			out = append(out, s)
		case !slices.ContainsFunc(out, func(o ToolSpec) bool { return o.Name == g.Name }):
			out = append(out, ToolSpec{Name: g.Name, Description: cmp.Or(g.Description, s.Description), InputSchema: s.InputSchema})
		}
	}
	r.groupMembers = offered
	return out
}

// groupOf is the group tool belongs to, or nil.
func (r *run) groupOf(tool string) *ToolGroup {
	for i := range r.cfg.ToolGroups {
		g := &r.cfg.ToolGroups[i]
		if slices.ContainsFunc(g.Members, func(m GroupMember) bool { return m.Tool == tool }) {
			return g
		}
	}
	return nil
}

// offeredGroup is the group named name when the run offers it, or nil.
func (r *run) offeredGroup(name string) *ToolGroup {
	for i := range r.cfg.ToolGroups {
		if g := &r.cfg.ToolGroups[i]; g.Name == name && r.isOffered(name) {
			return g
		}
	}
	return nil
}

// chooseMembers orders g's offered members for a call: by compareMembers (declared order
// on a tie), those that failed in this run last, those whose runtime is down left out.
func (r *run) chooseMembers(g *ToolGroup) []string {
	members := g.Members
	if g.Measure != nil {
		members = g.Measure()
	}
	var ms []GroupMember
	for _, m := range members {
		_, down := r.downTools[m.Tool]
		offered := slices.ContainsFunc(r.groupMembers, func(s ToolSpec) bool { return s.Name == m.Tool })
		if offered && !down {
			ms = append(ms, m)
		}
	}
	slices.SortStableFunc(ms, func(a, b GroupMember) int {
		if fa, fb := r.failedTools[a.Tool], r.failedTools[b.Tool]; fa != fb {
			if fa {
				return 1
			}
			return -1
		}
		return compareMembers(a, b)
	})
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Tool
	}
	return out
}

// callable reports whether the run may call tool for pc: an offered tool; a member of
// the group pc runs for; or, in a direct call (a person's or a workflow's, not the
// model's: L22), a member of any group, which only the model does not see.
func (r *run) callable(pc *pendingCall, tool string) bool {
	if r.isOffered(tool) {
		return true
	}
	g := r.groupOf(tool)
	return g != nil && (g.Name == pc.group || r.in.direct != nil && r.isOffered(g.Name))
}

// noteFailure remembers that tool failed in this run, for chooseMembers.
func (r *run) noteFailure(tool string) {
	if r.failedTools == nil {
		r.failedTools = map[string]bool{}
	}
	r.failedTools[tool] = true
}

// asked is the call as the model made it: a group's call under the group's name (the
// tool message answers the name the model called), any other as it is.
func (pc *pendingCall) asked() ToolCall {
	c := pc.call
	if pc.group != "" && pc.fallbackFor == "" {
		c.Name = pc.group
	}
	return c
}
