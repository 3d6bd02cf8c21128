package workflow

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// LinkError is a problem with a workflow step naming another workflow: Key is relative
// to Workflow's table ("steps.1.workflow").
type LinkError struct {
	Workflow string
	KeyError
}

// Link connects the workflow steps of ws (compiled workflows by name) to the workflows
// they run. A step naming an unknown workflow, a cycle of workflows running each other
// (which would never end), and a sub-workflow with an approval step are refused: a
// sub-workflow runs to its end inside its parent's step, and there is no one to ask
// there (decide in the parent, before the step).
func Link(ws map[string]*Workflow) error {
	names := make([]string, 0, len(ws))
	for n := range ws {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		w := ws[n]
		w.subs = map[string]*Workflow{}
		subs := w.Workflows()
		keys := make([]string, 0, len(subs))
		for k := range subs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sub, ok := ws[subs[k]]
			switch {
			case !ok:
				return &LinkError{n, KeyError{k, fmt.Sprintf("unknown workflow %q (workflows: %s)", subs[k], strings.Join(names, ", "))}}
			case sub.HasApproval():
				return &LinkError{n, KeyError{k, fmt.Sprintf("workflow %q has an approval step: a sub-workflow runs to its end inside this step, with no one to ask (put the approval in %q)", subs[k], n)}}
			}
			w.subs[subs[k]] = sub
		}
	}
	for _, n := range names {
		if cycle := linkCycle(ws, n, nil); cycle != nil {
			key := ""
			for k, v := range ws[n].Workflows() {
				if v == cycle[1] && (key == "" || k < key) {
					key = k
				}
			}
			return &LinkError{n, KeyError{key, "workflows run each other in a cycle: " + strings.Join(cycle, " → ")}}
		}
	}
	return nil
}

// linkCycle returns a cycle of workflow steps through name, or nil.
func linkCycle(ws map[string]*Workflow, name string, path []string) []string {
	if i := slices.Index(path, name); i >= 0 {
		return append(slices.Clone(path[i:]), name)
	}
	path = append(path, name)
	subs := ws[name].Workflows()
	targets := make([]string, 0, len(subs))
	for _, t := range subs {
		targets = append(targets, t)
	}
	sort.Strings(targets)
	for _, t := range slices.Compact(targets) {
		if c := linkCycle(ws, t, path); c != nil {
			if c[0] == path[0] {
				return c
			} // else a cycle not through name: reported at its own workflow
		}
	}
	return nil
}
