package loop

// counters counts a run's tool calls for the caps of the decision chain (L8): calls in
// the run, calls per tool, and calls per tool and canonical arguments (duplicates).
type counters struct {
	toolCalls int            // executed or attempted this run
	perTool   []toolCount    // calls per tool name (a run calls few tools: a slice beats a map)
	perBuf    [2]toolCount   // where perTool starts, in the run's allocation
	dupes     map[string]int // calls per name + canonical args, from a tool's second call
}

type toolCount struct {
	name  string
	n     int
	first string // the arguments of its first call, until a second comes
}

// countTool counts a call of name and returns the tool's entry.
func (r *counters) countTool(name string) *toolCount {
	for i := range r.perTool {
		if r.perTool[i].name == name {
			r.perTool[i].n++
			return &r.perTool[i]
		}
	}
	if r.perTool == nil {
		r.perTool = r.perBuf[:0]
	}
	r.perTool = append(r.perTool, toolCount{name: name, n: 1})
	return &r.perTool[len(r.perTool)-1]
}

// check runs the duplicate and call-cap checks of the decision chain (L8) over a
// batch of proposed calls. It returns the index of the first offending call and the
// reason, or -1. Counts include the calls before the offender, which will run.
func (r *counters) check(calls []ToolCall, p ToolPolicy) (int, Reason) {
	for i, c := range calls {
		tc := r.countTool(c.Name)
		r.toolCalls++
		switch {
		case p.MaxDuplicateCalls > 0 && r.countDuplicate(tc, c) > p.MaxDuplicateCalls:
			return i, ReasonDuplicateCall
		case p.MaxCallsPerTool > 0 && tc.n > p.MaxCallsPerTool,
			p.MaxCallsPerRun > 0 && r.toolCalls > p.MaxCallsPerRun:
			return i, ReasonToolCallLimit
		}
	}
	return -1, ""
}

// countDuplicate counts the calls of c's tool with canonically equal arguments, c
// included. A tool's first call cannot be a duplicate, so its arguments are only
// canonicalised when a second call of the same tool comes: most runs never pay for it.
func (r *counters) countDuplicate(tc *toolCount, c ToolCall) int {
	if tc.n == 1 {
		tc.first = c.Arguments
		return 1
	}
	if r.dupes == nil {
		r.dupes = map[string]int{}
	}
	if tc.n == 2 {
		r.dupes[dupKey(c.Name, tc.first)]++
		tc.first = ""
	}
	k := dupKey(c.Name, c.Arguments)
	r.dupes[k]++
	return r.dupes[k]
}

func dupKey(name, args string) string {
	if canon, ok := canonicalJSON(args); ok {
		return name + "\x00" + canon
	}
	return name + "\x00" + args
}
