package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/workflow"
)

// Workflows serve POST /v1/workflows/{name}/runs and the GET routes the console draws
// them from (workflowviews.go; docs/workflows.md#http).
type Workflows struct {
	Find   func(name string) (*workflow.Workflow, bool)
	List   func() []string // the declared workflows' names
	Engine *workflow.Engine
}

// WorkflowRunInput is the body of POST /v1/workflows/{name}/runs: inputs for a new run,
// or runId of a stored one to resume, with resume entries (AG-UI's shape, as POST
// /v1/runs takes them) deciding its waiting approval steps: interruptId is the step id.
// It is a subset of AG-UI's RunAgentInput, so an AG-UI client (HttpAgent) pointed at the
// route drives a workflow: its other fields are ignored, and forwardedProps.input gives
// the inputs when input is absent.
type WorkflowRunInput struct {
	RunID string `json:"runId,omitempty"`
	// Owner names the user whose run runId is (her id, as the listing gives it): an
	// admin or operator resumes or decides another user's run with it. Default: the
	// caller's own run.
	Owner          string          `json:"owner,omitempty"`
	Input          json.RawMessage `json:"input,omitempty"`
	Resume         []resumeEntry   `json:"resume,omitempty"`
	ForwardedProps struct {
		Input json.RawMessage `json:"input,omitempty"`
	} `json:"forwardedProps"`
}

// runInput is the engine's input for a body: inputs (or forwardedProps.input), decisions
// from the resume entries, a new run id when none is given.
func (body WorkflowRunInput) runInput() (workflow.RunInput, error) {
	if len(body.Input) == 0 {
		body.Input = body.ForwardedProps.Input
	}
	in := workflow.RunInput{RunID: body.RunID, Inputs: body.Input, Approvals: map[string]workflow.Decision{}}
	for i, e := range body.Resume {
		a, err := approval(e)
		if err == nil && e.InterruptID == "" {
			err = errors.New("interruptId is required")
		}
		if err != nil {
			return in, fmt.Errorf("resume[%d]: %v", i, err)
		}
		in.Approvals[e.InterruptID] = workflow.Decision{Approved: a.Approved, Comment: a.Reason}
	}
	if in.RunID == "" {
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		in.RunID = "wf-" + hex.EncodeToString(b)
	}
	return in, nil
}

// handleWorkflowRun runs a workflow and streams it as AG-UI: RUN_STARTED (threadId
// "workflow:NAME"), STEP_STARTED / STEP_FINISHED per step (stepName = the step id) with
// a CUSTOM agenthost.workflow_step after each end carrying status and output, and
// RUN_FINISHED (result: status and outputs; outcome interrupt listing the approval steps
// that wait) or RUN_ERROR (a failed step). The run belongs to the request: a client that
// goes away aborts it, and the same runId resumes it later.
func (s *Server) handleWorkflowRun(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	wf, ok := s.opts.Workflows.Find(name)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no workflow %q", name))
		return
	}
	var body WorkflowRunInput
	if !s.readJSON(w, r, &body) {
		return
	}
	in, err := body.runInput()
	if err == nil {
		err = workflow.CheckRunID(in.RunID)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !s.ownWorkflowRun(w, r, wf, &in, body.Owner) {
		return
	}
	thread := "workflow:" + name
	key := loop.RunInput{SessionID: workflow.RunSession(name, in.Owner, in.RunID), RunID: in.RunID}
	if code, msg := s.claim(key); code != 0 {
		writeClaimError(w, code, msg)
		return
	}
	// Released as soon as the run returns, before its last events are written: a client
	// that resumes the moment it reads RUN_FINISHED must not find the run still claimed.
	release := sync.OnceFunc(func() { s.release(key) })
	defer release()
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	defer context.AfterFunc(s.runsCtx, func() { cancel(context.Cause(s.runsCtx)) })()

	stream := newSSE(w)
	ws := &wfStream{stream: stream, thread: thread, open: map[string]bool{}}
	run := func(ctx context.Context, emit func(workflow.Event)) (workflow.Result, error) {
		return s.opts.Workflows.Engine.Run(ctx, wf, in, emit)
	}
	if wd, ok := s.opts.Dispatch.(workflowDispatcher); ok {
		run = func(ctx context.Context, emit func(workflow.Event)) (workflow.Result, error) {
			return s.followWorkflow(ctx, wd, wf, in, emit)
		}
	}
	res, err := run(ctx, ws.event)
	release()
	if err != nil && !stream.started {
		code := http.StatusInternalServerError
		switch {
		case errors.Is(err, workflow.ErrInputs):
			code = http.StatusBadRequest
		case errors.Is(err, loop.ErrSessionBusy):
			code = http.StatusConflict
		case storeUnavailable(err): // 503 and Retry-After: a database restarting
			s.writeStoreError(w, r, code, err.Error(), err)
			return
		}
		writeError(w, code, err.Error())
		return
	}
	if err != nil {
		stream.send(runError{base: now(aguiRunError), Message: err.Error(), Code: "store"})
		return
	}
	ws.finish(res)
}

// ownWorkflowRun finds whose run it is: the caller's (her id), or the owner the body
// names, which the door (AuthorizeOwned) allows to admins and operators only; its
// record, lease, step sessions and job are keyed by the owner (workflow/owner.go), so
// no one else's run of the same id is reached. Decisions (resume entries) need a stored
// run: another user's, like one that does not exist, answers the same 404, naming
// neither. What is allowed is audited: who (the caller, an admin resuming a user's run
// included) started or resumed which run, and what they decided.
func (s *Server) ownWorkflowRun(w http.ResponseWriter, r *http.Request, wf *workflow.Workflow, in *workflow.RunInput, owner string) bool {
	p, _ := PrincipalFrom(r.Context())
	in.Owner = p.ID
	if owner != "" {
		in.Owner = owner
	}
	switch err := s.door().AuthorizeOwned(r.Context(), p, access.Write, in.Owner); {
	case errors.Is(err, access.ErrNotVisible) || errors.Is(err, access.ErrNotAllowed):
		writeError(w, http.StatusNotFound, "no such workflow run")
		return false
	case err != nil:
		s.writeStoreError(w, r, http.StatusServiceUnavailable, err.Error(), err)
		return false
	}
	_, stored, err := workflow.LoadOwnedRecord(r.Context(), s.opts.Workflows.Engine.Store, wf.Name, in.Owner, in.RunID)
	if err != nil {
		s.writeStoreError(w, r, http.StatusInternalServerError, err.Error(), err)
		return false
	}
	if len(in.Approvals) > 0 && !stored {
		writeError(w, http.StatusNotFound, "no such workflow run")
		return false
	}
	detail := map[string]string{"workflow": wf.Name, "run": in.RunID, "resumed": strconv.FormatBool(stored)}
	if in.Owner != p.ID {
		detail["owner"] = in.Owner
	}
	for step, d := range in.Approvals {
		detail["step:"+step] = map[bool]string{true: "approved", false: "rejected"}[d.Approved]
	}
	s.audit(r, audit.Record{Action: audit.ActionWorkflowRun, Target: workflow.RunSession(wf.Name, in.Owner, in.RunID), Detail: detail})
	return true
}

func now(t string) base { return base{Type: t, Timestamp: time.Now().UnixMilli()} }

// wfStream turns a workflow run's events into AG-UI events on its stream.
type wfStream struct {
	stream *sse
	thread string
	open   map[string]bool // steps with a STEP_STARTED and no STEP_FINISHED yet
	order  []string
}

// opens sends STEP_STARTED for a step the stream has not opened yet.
func (ws *wfStream) opens(step string) {
	if !ws.open[step] {
		ws.open[step] = true
		ws.order = append(ws.order, step)
		ws.stream.send(aguiStep{base: now(aguiStepStarted), StepName: step})
	}
}

func (ws *wfStream) event(e workflow.Event) {
	switch e.Type {
	case workflow.EventWorkflowStarted:
		ws.stream.send(runStarted{base: now(aguiRunStarted), ThreadID: ws.thread, RunID: e.RunID})
	case workflow.EventStepStarted:
		ws.opens(e.Step)
	case workflow.EventStepFinished:
		ws.opens(e.Step) // settled without running (skipped, decided): still a step
		delete(ws.open, e.Step)
		ws.stream.send(aguiStep{base: now(aguiStepFinished), StepName: e.Step})
		ws.stream.send(custom{base: now(aguiCustom), Name: "agenthost.workflow_step",
			Value: map[string]any{"step": e.Step, "kind": e.Kind, "status": e.Status, "output": e.Output, "error": e.Error}})
	case workflow.EventStepWaiting:
		ws.opens(e.Step) // waiting since an earlier request: open it in this stream
		ws.stream.send(custom{base: now(aguiCustom), Name: "agenthost.workflow_step",
			Value: map[string]any{"step": e.Step, "kind": e.Kind, "status": workflow.StatusWaiting, "prompt": e.Prompt}})
	case workflow.EventWorkflowFinished:
		for _, id := range ws.order { // a waiting approval ends this run's stream
			if ws.open[id] {
				ws.stream.send(aguiStep{base: now(aguiStepFinished), StepName: id})
			}
		}
	}
}

// finish sends how the run ended: RUN_FINISHED (success, interrupt, cancelled) or
// RUN_ERROR (a failed step).
func (ws *wfStream) finish(res workflow.Result) {
	stream, thread := ws.stream, ws.thread
	rec := res.Record
	out, _ := json.Marshal(rec.Outputs)
	result := &runResult{Status: rec.Status, Output: out}
	switch rec.Status {
	case workflow.RunCompleted:
		stream.send(runFinished{base: now(aguiRunFinished), ThreadID: thread, RunID: rec.RunID, Result: result, Outcome: &outcome{Type: "success"}})
	case workflow.RunInterrupted:
		oc := &outcome{Type: "interrupt"}
		for _, id := range res.Waiting {
			msg := ""
			if o, ok := rec.Steps[id].Output.(map[string]any); ok {
				msg, _ = o["prompt"].(string)
			}
			oc.Interrupts = append(oc.Interrupts, interrupt{ID: id, Reason: "workflow_approval", Message: msg})
		}
		stream.send(runFinished{base: now(aguiRunFinished), ThreadID: thread, RunID: rec.RunID, Result: result, Outcome: oc})
	case workflow.RunAborted:
		stream.send(runFinished{base: now(aguiRunFinished), ThreadID: thread, RunID: rec.RunID, Result: result, Outcome: &outcome{Type: "cancelled"}})
	default:
		stream.send(runError{base: now(aguiRunError), Message: rec.Error, Code: "workflow_failed"})
	}
}
