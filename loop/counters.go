package loop

// counters counts a run's tool calls for the caps of the decision chain (L8): calls in
// the run, calls per tool, and calls per tool and canonical arguments (duplicates).
type counters struct {
	toolCalls int               // executed or attempted this run
	perTool   map[string]int    // calls per tool name
	dupes     map[string]int    // calls per name + canonical args
	firstArgs map[string]string // raw args of a tool's only call so far
}

// check runs the duplicate and call-cap checks of the decision chain (L8) over a
// batch of proposed calls. It returns the index of the first offending call and the
// reason, or -1. Counts include the calls before the offender, which will run.
func (r *counters) check(calls []ToolCall, p ToolPolicy) (int, Reason) {
	if r.perTool == nil {
		r.perTool, r.dupes, r.firstArgs = map[string]int{}, map[string]int{}, map[string]string{}
	}
	for i, c := range calls {
		r.perTool[c.Name]++
		r.toolCalls++
		switch {
		case p.MaxDuplicateCalls > 0 && r.countDuplicate(c) > p.MaxDuplicateCalls:
			return i, ReasonDuplicateCall
		case p.MaxCallsPerTool > 0 && r.perTool[c.Name] > p.MaxCallsPerTool,
			p.MaxCallsPerRun > 0 && r.toolCalls > p.MaxCallsPerRun:
			return i, ReasonToolCallLimit
		}
	}
	return -1, ""
}

// countDuplicate counts the calls of c's tool with canonically equal arguments, c
// included. A tool's first call cannot be a duplicate, so its arguments are only
// canonicalised when a second call of the same tool comes: most runs never pay for it.
func (r *counters) countDuplicate(c ToolCall) int {
	if r.perTool[c.Name] == 1 {
		r.firstArgs[c.Name] = c.Arguments
		return 1
	}
	if first, ok := r.firstArgs[c.Name]; ok {
		r.dupes[dupKey(c.Name, first)]++
		delete(r.firstArgs, c.Name)
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
