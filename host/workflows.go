package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/workflow"
)

// checkWorkflowTools is the part of the workflows' check that needs the loaded tools:
// every tool step names a tool the model could call.
func (h *Host) checkWorkflowTools() error {
	var have []string
	for _, t := range h.ToolList() {
		have = append(have, t.Name)
	}
	for _, name := range h.Manifest.WorkflowNames() {
		w, _ := h.Manifest.Workflow(name)
		keys := make([]string, 0)
		tools := w.Tools()
		for k := range tools {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, key := range keys {
			if !slices.Contains(have, tools[key]) {
				return h.Manifest.WorkflowErrorAt(name, key, "unknown tool %q (tools: %s)", tools[key], strings.Join(have, ", "))
			}
		}
	}
	return nil
}

// Workflows is the engine that runs the manifest's workflows on this host: tool steps
// through Door.CallTool (the one tool pipeline, L22), prompt steps through Door.Run (the
// agent of the moment, with the manifest's run defaults), both for the principal on the
// workflow's context (the surface that started it) or the local user; step records in
// the host's store.
func (h *Host) Workflows() *workflow.Engine {
	return &workflow.Engine{Store: h.Store, Exec: workflowExec{h}}
}

type workflowExec struct{ h *Host }

// RidesRunWrites implements workflow.RunWriteRider: a tool step is a DirectCall on the
// step's context, so a new run's start rides on its first call's first write.
func (workflowExec) RidesRunWrites() {}

func (x workflowExec) ToolStep(ctx context.Context, name string, args []byte, session string, timeout time.Duration) (loop.ToolResult, loop.RunResult) {
	owner := workflow.Owner(ctx)
	if err := x.h.ClaimDerived(ctx, session, owner); err != nil {
		return loop.ToolResult{}, loop.RunResult{SessionID: session, Status: loop.StatusFailed, Reason: loop.ReasonError, Err: err}
	}
	return x.h.Door().CallTool(ctx, x.h.principalOf(ctx, owner), name, args, CallOptions{SessionID: session, Timeout: timeout})
}

func (x workflowExec) RunPrompt(ctx context.Context, agent, prompt, session string) (loop.RunResult, error) {
	owner := workflow.Owner(ctx)
	if err := x.h.ClaimDerived(ctx, session, owner); err != nil {
		return loop.RunResult{SessionID: session, Status: loop.StatusFailed, Reason: loop.ReasonError, Err: err}, err
	}
	if x.h.live.agent() == nil {
		err := fmt.Errorf("a prompt step needs a provider: %w", errNoModel)
		return loop.RunResult{Status: loop.StatusFailed, Reason: loop.ReasonError, Err: err}, err
	}
	return x.h.Door().Run(ctx, x.h.principalOf(ctx, owner), loop.RunInput{SessionID: session, Agent: agent, User: owner, Messages: []loop.Message{loop.UserMessage(prompt)}}, nil)
}

// ClaimDerived makes owner (a user id; "" the store's operator) the owner of a session
// the host derives for them (a workflow step's, workflow.StepSession) before anything
// runs in it, or confirms it is theirs; a session someone else made first under that name
// is refused with an error that names neither it nor them (access.Claim): the step
// fails, nothing of it is written where another user reads. Every entrance that runs a
// step goes through here (the engine's Executor).
func (h *Host) ClaimDerived(ctx context.Context, session, owner string) error {
	as, ok := h.Access()
	if !ok {
		return nil
	}
	if err := access.Claim(ctx, as, session, owner); err != nil {
		if errors.Is(err, access.ErrNotOwned) {
			return errors.New("the step's session belongs to someone else: the step does not run in it")
		}
		return err
	}
	return nil
}

// RunWorkflow runs (or resumes) a declared workflow by name on this host's engine: what
// a cluster worker does with a workflow job (surface/cluster).
func (h *Host) RunWorkflow(ctx context.Context, name string, in workflow.RunInput) (workflow.Result, error) {
	w, ok := h.Manifest.Workflow(name)
	if !ok {
		return workflow.Result{}, fmt.Errorf("%w: no workflow %q in this node's manifest", workflow.ErrInputs, name)
	}
	return h.Workflows().Run(ctx, w, in, nil)
}
