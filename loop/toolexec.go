package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// checkCaps runs the duplicate and call-cap checks of the decision chain (L8) over a
// batch of proposed calls; see counters.check.
func (r *run) checkCaps(calls []ToolCall) (int, Reason) { return r.counters.check(calls, r.policy) }

// refuseCalls stores an error result for calls[from:], so the history never holds a call
// without its result and a resume does not run a call the policy refused.
func (r *run) refuseCalls(calls []ToolCall, from int, reason Reason) {
	for _, c := range calls[from:] {
		text := fmt.Sprintf("Error: tool call not executed: the run stopped (%s)", reason)
		r.appendMessage(toolMessage(c, ErrorResult(text)))
	}
}

// pendingCall is a call that passed every check and waits to run.
type pendingCall struct {
	call   ToolCall
	tool   Tool
	args   string
	result ToolResult
	dur    time.Duration
	done   chan struct{}
	client bool // a client tool's call: the caller runs it (L16)
}

// runTools executes a batch (L5, L6, L13): checks each call in order, runs the ones that
// pass (up to MaxParallel at once), and stores the results in the model's call order.
func (r *run) runTools(calls []ToolCall) ([]ToolResult, error) {
	r.on(onRunTools)
	results := make([]ToolResult, len(calls))
	parallel := r.policy.MaxParallel > 1 && len(calls) > 1
	var sem chan struct{}
	if parallel {
		sem = make(chan struct{}, r.policy.MaxParallel)
	}
	prepared := make([]*pendingCall, len(calls))
	finished := 0
	// finishUpTo records results in call order up to n, waiting for calls still running.
	finishUpTo := func(n int) {
		for ; finished < n; finished++ {
			pc := prepared[finished]
			if pc.client {
				continue
			}
			if pc.done != nil {
				<-pc.done
			}
			results[finished] = r.finishCall(pc)
		}
	}
	for i, c := range calls {
		if err := r.ctxErr(); err != nil { // L13: checked before each tool
			finishUpTo(i) // keep what already ran
			return nil, err
		}
		r.emit(EventStepStart, StepStartData{ID: c.ID, Name: c.Name})
		r.emit(EventToolCall, ToolCallData{ID: c.ID, Name: c.Name, Arguments: eventArgs(c.Arguments)})
		if r.isClient(c.Name) {
			prepared[i] = &pendingCall{call: c, client: true}
			r.clientPending = append(r.clientPending, c)
			continue
		}
		pc, err := r.prepareCall(c)
		if err != nil {
			finishUpTo(i)
			return nil, err
		}
		prepared[i] = pc
		if pc.tool != nil {
			if err := r.flush(); err != nil { // the call is stored before it runs (L21)
				finishUpTo(i) // wait for the calls already running
				return nil, err
			}
		}
		switch {
		case pc.tool == nil: // already has its error result
		case parallel:
			pc.done = make(chan struct{})
			sem <- struct{}{}
			r.cfg.Driver.Go(func() {
				defer func() { <-sem; close(pc.done) }()
				r.invoke(pc)
			})
		default:
			r.invoke(pc)
		}
		if !parallel {
			finishUpTo(i + 1)
		}
	}
	finishUpTo(len(calls))
	return results, nil
}

// prepareCall applies the checks before a call runs: unknown tool, argument schema,
// tool_args guardrails, permission, approval. A call that fails one gets its error
// result and a nil tool.
func (r *run) prepareCall(c ToolCall) (*pendingCall, error) {
	pc := &pendingCall{call: c, args: c.Arguments}
	reject := func(text string) (*pendingCall, error) {
		pc.result = ErrorResult(text)
		return pc, nil
	}
	if r.outOfTime() {
		return reject(fmt.Sprintf("Error: tool call not executed: %v (%s)", errOutOfTime, r.limits.MaxRunDuration))
	}
	e := r.cfg.Tools.lookup(c.Name)
	if e == nil {
		if t := r.teamTool(c.Name); t != nil {
			e = &toolEntry{tool: t, spec: t.Spec()}
		}
	}
	if e == nil || !r.isOffered(c.Name) {
		return reject(fmt.Sprintf("Error: Unknown tool '%s'", c.Name))
	}
	if pc.args == "" {
		pc.args = "{}" // many models send "" for a call without arguments
	}
	if e.schema != nil && json.Valid([]byte(pc.args)) {
		if err := e.schema.validate(pc.args); err != nil {
			return reject(fmt.Sprintf("Error: invalid arguments for tool '%s': %v", c.Name, err))
		}
	}
	args, err := r.guard(StageToolArgs, pc.args, c.Name)
	if err != nil {
		return reject("Error: " + err.Error())
	}
	pc.args = args
	verdict, why := r.permission(c)
	switch verdict {
	case PermitDeny:
		return reject(fmt.Sprintf("Error: permission denied for tool '%s': %s", c.Name, why))
	case PermitAsk:
		ok, why, err := r.approve(c)
		if err != nil {
			return nil, err
		}
		if !ok {
			return reject(fmt.Sprintf("Error: tool call rejected: %s", why))
		}
	}
	pc.tool = e.tool
	return pc, nil
}

// isClient reports whether name is one of the run's client tools (L16).
// permission decides a call (L6): the permission hook first (deny and ask are final),
// then the approval policy: tools RequireApproval lists ("*" = all) ask, the others get
// ApprovalDefault (allow unless set).
func (r *run) permission(c ToolCall) (PermissionVerdict, string) {
	if r.cfg.Permission != nil {
		d := r.cfg.Permission(r.ctx, c)
		switch d.Verdict {
		case PermitDeny:
			return PermitDeny, cmpOr(d.Reason, "denied by the permission hook")
		case PermitAsk:
			return PermitAsk, ""
		}
	}
	if slices.Contains(r.policy.RequireApproval, c.Name) || slices.Contains(r.policy.RequireApproval, "*") {
		return PermitAsk, ""
	}
	if r.policy.ApprovalDefault == PermitDeny {
		return PermitDeny, "approval_default is deny"
	}
	return cmpOr(r.policy.ApprovalDefault, PermitAllow), ""
}

func (r *run) isClient(name string) bool {
	for _, s := range r.in.ClientTools {
		if s.Name == name {
			return true
		}
	}
	return false
}

func (r *run) isOffered(name string) bool {
	for _, s := range r.offered {
		if s.Name == name {
			return true
		}
	}
	return false
}

// approve asks the Approver, moving the run to awaiting_human while it waits (L6). An
// answer given in RunInput.Approvals is used without asking.
func (r *run) approve(c ToolCall) (bool, string, error) {
	if a, ok := r.in.Approvals[c.ID]; ok {
		return a.Approved, cmpOr(a.Reason, "rejected by the user"), nil
	}
	if r.cfg.Approver == nil {
		return false, "approval required and no approver is configured", nil
	}
	// Everything before the request is stored before the request is shown (a client
	// that answers it, or a process killed while it waits, finds the earlier results
	// stored), and the request is stored before the wait (L21).
	if err := r.flush(); err != nil {
		return false, "", err
	}
	r.emit(EventApproval, ToolCallData{ID: c.ID, Name: c.Name, Arguments: eventArgs(c.Arguments)})
	r.on(onAskHuman)
	if err := r.flush(); err != nil {
		return false, "", err
	}
	a, err := r.cfg.Approver.Approve(r.ctx, c)
	if errors.Is(err, ErrApprovalPending) {
		return false, "", err // the run ends here, still awaiting_human
	}
	r.on(onAnswered)
	if err != nil {
		if cerr := r.ctxErr(); cerr != nil {
			return false, "", cerr
		}
		return false, fmt.Sprintf("approval failed: %v", err), nil
	}
	if !a.Approved {
		return false, cmpOr(a.Reason, "rejected by the user"), nil
	}
	return true, "", nil
}

func cmpOr[S ~string](s, def S) S {
	if s == "" {
		return def
	}
	return s
}

// invoke calls the tool with the run's context (and the policy timeout). A panic or an
// error becomes an error result. Safe to run on another goroutine.
func (r *run) invoke(pc *pendingCall) {
	ctx := r.work
	if t := r.policy.Timeout; t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	start := r.cfg.Driver.Now()
	defer func() {
		pc.dur = r.cfg.Driver.Now().Sub(start)
		if p := recover(); p != nil {
			pc.result = ErrorResult(fmt.Sprintf("Error: tool '%s' panicked: %v", pc.call.Name, p))
		}
	}()
	call := pc.call
	call.Arguments = pc.args
	ctx = withCallID(ctx, &pc.call.ID) // beside the run's CallInfo (agent.go)
	res, err := r.cfg.Driver.CallTool(ctx, pc.tool, call)
	switch {
	case err != nil && r.outOfTime():
		res = ErrorResult(fmt.Sprintf("Error: tool '%s' stopped: %v (%s)", call.Name, errOutOfTime, r.limits.MaxRunDuration))
	case errors.Is(err, context.DeadlineExceeded) && r.ctx.Err() == nil:
		res = ErrorResult(fmt.Sprintf("Error: tool '%s' timed out after %s", call.Name, r.policy.Timeout))
	case err != nil:
		res = ErrorResult(fmt.Sprintf("Error: %v", err))
	}
	pc.result = res
}

// finishCall applies tool_result guardrails, emits the result events and stores the
// tool message.
func (r *run) finishCall(pc *pendingCall) ToolResult {
	res := pc.result
	if pc.tool != nil && !res.IsError {
		text, err := r.guard(StageToolResult, res.Text(), pc.call.Name)
		if err != nil {
			res = ErrorResult("Error: " + err.Error())
		} else if text != res.Text() {
			res.Content = []Part{TextPart(text)}
		}
	}
	status := "ok"
	if res.IsError {
		status = "error"
	}
	r.toolCalls++
	if res.IsError {
		r.toolErrors++
	}
	r.emit(EventToolResult, ToolResultData{ID: pc.call.ID, Name: pc.call.Name, Content: res.Text(),
		IsError: res.IsError, DurationMS: pc.dur.Milliseconds()})
	r.emit(EventStepComplete, StepCompleteData{ID: pc.call.ID, Status: status})
	r.appendMessage(toolMessage(pc.call, res))
	return res
}

func toolMessage(c ToolCall, res ToolResult) Message {
	content := res.Content
	if len(content) == 0 {
		content = []Part{TextPart("")}
	}
	return Message{Role: RoleTool, ToolCallID: c.ID, Name: c.Name, Content: content}
}

// eventArgs is the tool_call event's arguments: the JSON itself, or {"_raw": s} (L5).
func eventArgs(s string) json.RawMessage {
	if s == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(map[string]string{"_raw": s})
	return b
}
