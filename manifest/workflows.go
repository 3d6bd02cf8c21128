package manifest

import (
	"errors"
	"sort"
	"strings"

	"github.com/agenthost/agenthost/workflow"
)

// checkWorkflows compiles the [workflows.NAME] tables (workflow, docs/workflows.md):
// a cycle, an unknown step or agent, an expression that does not compile is an error
// at the offending key. Tool names are checked by Open, once the plugins said which
// tools they have.
func (m *Manifest) checkWorkflows() error {
	m.workflows = map[string]*workflow.Workflow{}
	for _, name := range m.WorkflowNames() {
		w, err := workflow.Compile(name, m.Workflows[name])
		if err != nil {
			var ke *workflow.KeyError
			if errors.As(err, &ke) {
				return m.WorkflowErrorAt(name, ke.Key, "%s", ke.Msg)
			}
			return m.WorkflowErrorAt(name, "", "%v", err)
		}
		for key, agent := range w.Agents() {
			if _, ok := m.AgentConfig(agent); !ok {
				return m.WorkflowErrorAt(name, key, "unknown agent %q (agents: %s)", agent, strings.Join(m.AgentNames(), ", "))
			}
		}
		m.workflows[name] = w
	}
	if err := workflow.Link(m.workflows); err != nil {
		var le *workflow.LinkError
		if errors.As(err, &le) {
			return m.WorkflowErrorAt(le.Workflow, le.Key, "%s", le.Msg)
		}
		return err
	}
	return nil
}

// WorkflowNames lists the declared workflows, sorted.
func (m *Manifest) WorkflowNames() []string {
	names := make([]string, 0, len(m.Workflows))
	for n := range m.Workflows {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Workflow returns a compiled workflow by name.
func (m *Manifest) Workflow(name string) (*workflow.Workflow, bool) {
	w, ok := m.workflows[name]
	return w, ok
}
