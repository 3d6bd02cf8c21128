package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agenthost/agenthost/host/workflow"
	"github.com/agenthost/agenthost/loop"
)

// checkWorkflows compiles the [workflows.NAME] tables (host/workflow, docs/workflows.md):
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
				return m.errWorkflow(name, ke.Key, "%s", ke.Msg)
			}
			return m.errWorkflow(name, "", "%v", err)
		}
		for key, agent := range w.Agents() {
			if _, ok := m.AgentConfig(agent); !ok {
				return m.errWorkflow(name, key, "unknown agent %q (agents: %s)", agent, strings.Join(m.AgentNames(), ", "))
			}
		}
		m.workflows[name] = w
	}
	if err := workflow.Link(m.workflows); err != nil {
		var le *workflow.LinkError
		if errors.As(err, &le) {
			return m.errWorkflow(le.Workflow, le.Key, "%s", le.Msg)
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

// checkWorkflowTools is the part of the workflows' check that needs the loaded tools:
// every tool step names a tool the model could call.
func (h *Host) checkWorkflowTools() error {
	var have []string
	for _, t := range h.ToolList() {
		have = append(have, t.Name)
	}
	for _, name := range h.Manifest.WorkflowNames() {
		w := h.Manifest.workflows[name]
		keys := make([]string, 0)
		tools := w.Tools()
		for k := range tools {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, key := range keys {
			if !slices.Contains(have, tools[key]) {
				return h.Manifest.errWorkflow(name, key, "unknown tool %q (tools: %s)", tools[key], strings.Join(have, ", "))
			}
		}
	}
	return nil
}

// Workflows is the engine that runs the manifest's workflows on this host: tool steps
// through Host.Call (the one tool pipeline, L22), prompt steps through the host's
// Runner (the agent of the moment, with the manifest's run defaults), step records in
// the host's store.
func (h *Host) Workflows() *workflow.Engine {
	return &workflow.Engine{Store: h.Store, Exec: workflowExec{h}}
}

type workflowExec struct{ h *Host }

func (x workflowExec) CallTool(ctx context.Context, name string, args []byte, session string, timeout time.Duration) (loop.ToolResult, loop.RunResult) {
	return x.h.Call(ctx, name, args, CallOptions{SessionID: session, Timeout: timeout})
}

func (x workflowExec) RunPrompt(ctx context.Context, agent, prompt, session string) (loop.RunResult, error) {
	if x.h.live.cur.Load() == nil {
		err := fmt.Errorf("a prompt step needs a provider: %w", errNoModel)
		return loop.RunResult{Status: loop.StatusFailed, Reason: loop.ReasonError, Err: err}, err
	}
	return x.h.Runner().RunWith(ctx, loop.RunInput{SessionID: session, Agent: agent, Messages: []loop.Message{loop.UserMessage(prompt)}}, nil)
}

// RunWorkflow runs (or resumes) a declared workflow by name on this host's engine: what
// a cluster worker does with a workflow job (host/cluster).
func (h *Host) RunWorkflow(ctx context.Context, name string, in workflow.RunInput) (workflow.Result, error) {
	w, ok := h.Manifest.Workflow(name)
	if !ok {
		return workflow.Result{}, fmt.Errorf("%w: no workflow %q in this node's manifest", workflow.ErrInputs, name)
	}
	return h.Workflows().Run(ctx, w, in, nil)
}
