package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/host/workflow"
	"github.com/agenthost/agenthost/loop"
)

// compileWorkflows compiles the manifest's [workflows.NAME] against the loaded tools:
// an unknown tool, a cycle or an expression that does not compile is a manifest error at
// its key.
func (h *Host) compileWorkflows() error {
	if len(h.Manifest.Workflows) == 0 {
		return nil
	}
	names := map[string]bool{}
	for _, t := range h.tools {
		names[t.Spec().Name] = true
	}
	for _, t := range h.memoryTools() {
		names[t.Spec().Name] = true
	}
	h.workflows = map[string]*workflow.Workflow{}
	for _, name := range h.WorkflowNames() {
		w, err := workflow.Compile(name, h.Manifest.Workflows[name], func(tool string) bool { return names[tool] })
		var ke *workflow.KeyError
		switch {
		case errors.As(err, &ke):
			return h.Manifest.errKey(ke.Key, "%s", ke.Msg)
		case err != nil:
			return fmt.Errorf("%s: workflows.%s: %w", h.Manifest.Path, name, err)
		}
		h.workflows[name] = w
	}
	return nil
}

// WorkflowNames lists the manifest's workflows, sorted.
func (h *Host) WorkflowNames() []string {
	var out []string
	for name := range h.Manifest.Workflows {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// WorkflowOptions say how a workflow run reaches people and reports.
type WorkflowOptions struct {
	// Approver answers approval steps and tool calls that ask (nil refuses them).
	Approver loop.Approver
	Emit     func(workflow.Event)
	// User is who the run is for (memory is per user).
	User string
}

// RunWorkflow runs (or, with the id of an earlier run, resumes) a workflow. Tool steps
// go through the host's tool pipeline (Call: guardrails, permissions, approvals, the
// agent's caps and deadline), prompt steps are runs of the entry agent, each stored in a
// session of its own (wf:RUN:STEP); the run's state is stored in the session store.
func (h *Host) RunWorkflow(ctx context.Context, name, runID string, inputs map[string]any, o WorkflowOptions) (workflow.Result, error) {
	w, ok := h.workflows[name]
	if !ok {
		return workflow.Result{}, fmt.Errorf("no workflow %q (workflows: %s)", name, strings.Join(h.WorkflowNames(), ", "))
	}
	opts := workflow.Options{State: h.Store, Emit: o.Emit,
		Call: func(ctx context.Context, tool string, args []byte, session string) (loop.ToolResult, error) {
			res, run := h.Call(ctx, tool, args, CallOptions{SessionID: session, Approver: o.Approver, User: o.User})
			if run.Status != loop.StatusCompleted && len(res.Content) == 0 {
				return res, fmt.Errorf("the call ended %s/%s: %v", run.Status, run.Reason, run.Err)
			}
			return res, nil
		},
		Prompt: func(ctx context.Context, prompt, session string) (string, error) {
			if h.Agent == nil {
				return "", errors.New("a prompt step needs a provider")
			}
			res, err := h.Runner().RunWith(ctx, loop.RunInput{SessionID: session, User: o.User, Messages: []loop.Message{loop.UserMessage(prompt)}}, nil)
			if res.Status != loop.StatusCompleted {
				return "", fmt.Errorf("the agent's run ended %s/%s: %v", res.Status, res.Reason, err)
			}
			return res.Final.Text(), nil
		},
	}
	if o.Approver != nil {
		opts.Approve = o.Approver.Approve
	}
	return workflow.Run(ctx, w, runID, inputs, opts)
}
