package loop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The tool pipeline (rule L22) is the one path every tool call takes, whoever asked
// for it: a model's answer (runTools), a plan step (stepTool), a direct call from a
// surface that is not a model (Agent.DirectCall: `mcp serve`, `plugins call`). Each
// surface used to carry its own copy of part of it, and each copy drifted (a plan step
// skipped the tool_result guardrail; `mcp serve` skipped approvals). The stages, in
// order:
//
//	announce  step_start, tool_call
//	admit     run deadline → known and offered → argument schema → tool_args
//	          guardrail → permission plugin → approval policy (asking a human)
//	store     everything before the call is written (L21)
//	invoke    under the call's deadline: the policy timeout, a step's timeout, the run's
//	          max_run_duration, whichever ends first
//	settle    tool_result guardrail → counters → tool_result, step_complete
//
// Caps (L8) are checked over a whole answer before the pipeline by runTools, which must
// refuse the rest of an answer at once; a single call (callOne) checks them itself.
// What becomes of a settled result is the surface's business: a model's answer gets a
// tool message, a plan step an outcome, a direct call its return value.

// pendingCall is one call on its way through the pipeline.
// The values of ToolResultData.Refused.
const (
	RefusedDenied   = "denied"
	RefusedRejected = "rejected"
	RefusedToolsOff = "tools_off" // the run has tools off (toolsoff.go)
)

type pendingCall struct {
	call    ToolCall
	tool    Tool // nil when admit refused the call: result holds why
	args    string
	result  ToolResult
	dur     time.Duration
	timeout time.Duration // a deadline tighter than the policy's (a plan step's), or 0
	done    chan struct{}
	client  bool   // a client tool's call: the caller runs it (L16)
	refused string // RefusedDenied or RefusedRejected: admit's refusal was a decision, not a fault
	// pending: the tool said ErrApprovalPending (a nested run waits for a human, an
	// ask_NAME's). The call keeps no result; the run ends interrupted, and the run that
	// answers re-runs the call (L14), which resumes what waited.
	pending bool
	input   *InputRequest // what the pending call asks of a human (input.go)
	// failed: the tool failed (an error, a panic, a timeout), as opposed to answering
	// with an error result; fallback is the tool whose result the call then carries,
	// and fallbackFor, on a fallback's own call, the id of the call it stands in for.
	failed                bool
	fallback, fallbackFor string
	ctx                   callCtx // the call's context (invoke)
	// group is the tool group the model called, the call running on one of its members;
	// members are the others, in the order they stand in (toolgroup.go).
	group   string
	members []string
	// cached: the result is a cached one (resultcache.go), stored cacheAge ago.
	cached   bool
	cacheAge time.Duration
}

// announce emits the events that open a call.
func (r *run) announce(c ToolCall) {
	r.journal.pin()
	defer r.journal.unpin()
	r.journal.emit(EventStepStart, r.journal.pl.stepStart.put(StepStartData{ID: c.ID, Name: c.Name}))
	r.journal.emit(EventToolCall, r.journal.pl.toolCall.put(ToolCallData{ID: c.ID, Name: c.Name, Arguments: eventArgs(c.Arguments)}))
}

// callOne takes one call through every stage, caps included. It returns an error only
// when the run must end (a store write failed, the run was cancelled or interrupted
// while asking a human).
func (r *run) callOne(c ToolCall, timeout time.Duration) (ToolResult, error) {
	r.on(onRunTools)
	r.announce(c)
	if at, reason := r.checkCaps([]ToolCall{c}); at == 0 {
		pc := &pendingCall{call: c, result: ErrorResult(fmt.Sprintf("Error: tool call not executed: %s", reason))}
		return r.settle(pc), nil
	}
	pc, err := r.admit(c)
	if err != nil {
		return ToolResult{}, err
	}
	pc.timeout = timeout
	if pc.tool != nil {
		if err := r.journal.flush(); err != nil { // the call is stored before it runs (L21)
			return ToolResult{}, err
		}
		r.invoke(pc)
		if pc.pending {
			r.awaitInput(pc)
			return ToolResult{}, ErrApprovalPending
		}
	}
	return r.settle(pc), nil
}

// callWave takes several calls through the tool pipeline at once (a plan's ready tool
// steps): each announced, cap-checked and admitted in order, all stored before any runs
// (L21), then invoked up to par at a time, each under its own timeout, and settled in
// order. errs[i] is ErrApprovalPending for a call that waits for a human (and for the
// calls after it, which are not admitted: the resume runs them); err is a failure to
// store, which runs none of them. ends[i] is when call i returned.
func (r *run) callWave(calls []ToolCall, timeouts []time.Duration, par int) (results []ToolResult, ends []time.Time, errs []error, err error) {
	r.on(onRunTools)
	pcs := make([]*pendingCall, len(calls))
	waiting := -1 // the call whose approval is pending, if one is
	for i, c := range calls {
		r.announce(c)
		if at, reason := r.checkCaps([]ToolCall{c}); at == 0 {
			pcs[i] = &pendingCall{call: c, result: ErrorResult(fmt.Sprintf("Error: tool call not executed: %s", reason))}
			continue
		}
		pc, aerr := r.admit(c)
		if errors.Is(aerr, ErrApprovalPending) {
			// As in an answer's batch: the calls admitted before it run, the later
			// ones wait for the resume with it.
			waiting = i
			break
		}
		if aerr != nil {
			return nil, nil, nil, aerr
		}
		pc.timeout = timeouts[i]
		pcs[i] = pc
	}
	if err := r.journal.flush(); err != nil {
		return nil, nil, nil, err
	}
	ends = make([]time.Time, len(calls))
	sem := make(chan struct{}, max(par, 1))
	for i, pc := range pcs {
		if pc == nil {
			continue
		}
		if pc.tool == nil {
			ends[i] = r.cfg.Driver.Now()
			continue
		}
		pc.done = make(chan struct{})
		sem <- struct{}{}
		r.cfg.Driver.Go(func() {
			defer func() { ends[i] = r.cfg.Driver.Now(); <-sem; close(pc.done) }()
			r.invoke(pc)
		})
	}
	results, errs = make([]ToolResult, len(calls)), make([]error, len(calls))
	for i, pc := range pcs {
		if pc == nil { // its approval is pending, or it comes after that one
			if i >= waiting && waiting >= 0 {
				errs[i] = ErrApprovalPending
			}
			continue
		}
		if pc.done != nil {
			<-pc.done
		}
		if pc.pending {
			r.awaitInput(pc)
			errs[i] = ErrApprovalPending
			continue
		}
		results[i] = r.settle(pc)
	}
	return results, ends, errs, nil
}

// awaitInput stores what a pending call asks of a human (input_required), when it asks
// for input rather than waiting in a nested run.
func (r *run) awaitInput(pc *pendingCall) {
	if pc.input != nil {
		r.journal.emit(EventInputRequired, &InputRequiredData{ID: pc.call.ID, Name: pc.call.Name, Message: pc.input.Message, Schema: pc.input.Schema, Connect: pc.input.Connect})
	}
}

// admit applies the checks before a call runs: run deadline, unknown tool, argument
// schema, tool_args guardrails, permission, approval. A call that fails one gets its
// error result and a nil tool.
func (r *run) admit(c ToolCall) (*pendingCall, error) { return r.admitInto(new(pendingCall), c) }

// admitInto is admit with the call's pendingCall given (zero): a batch's first call
// uses one in the batch's allocation.
func (r *run) admitInto(pc *pendingCall, c ToolCall) (*pendingCall, error) {
	pc.call, pc.args = c, c.Arguments
	reject := func(text string) (*pendingCall, error) {
		pc.result = ErrorResult(text)
		return pc, nil
	}
	if r.outOfTime() {
		return reject(fmt.Sprintf("Error: tool call not executed: %v (%s)", errOutOfTime, r.limits.MaxRunDuration))
	}
	if r.toolsOff() {
		pc.refused = RefusedToolsOff
		return reject(fmt.Sprintf("Error: tool call not executed: tools are off for this run ('%s' was not called)", c.Name))
	}
	e, refusal := r.resolve(pc, &c)
	if e == nil {
		return reject(refusal)
	}
	if pc.args == "" {
		pc.args = "{}" // many models send "" for a call without arguments
	}
	if err := e.validate(pc.args); err != nil {
		return reject(fmt.Sprintf("Error: invalid arguments for tool '%s': %v", c.Name, err))
	}
	args, err := r.guard(StageToolArgs, pc.args, c.Name)
	if err != nil {
		return reject("Error: " + err.Error())
	}
	pc.args = args
	verdict, why, rule := r.permission(c)
	switch verdict {
	case PermitDeny:
		pc.refused = RefusedDenied
		return reject(fmt.Sprintf("Error: permission denied for tool '%s': %s", c.Name, why))
	case PermitAsk:
		ok, why, err := r.approve(c, rule)
		if err != nil {
			return nil, err
		}
		if !ok {
			pc.refused = RefusedRejected
			return reject(fmt.Sprintf("Error: tool call rejected: %s", why))
		}
	}
	pc.tool = e.tool
	return pc, nil
}

// resolve finds the tool c calls — for a tool group the member chosen (toolgroup.go),
// c and pc.call renamed to it — among the set's and the built-in tools, offered; or
// the text that refuses the call (with pc.failed when that is a failure: no member
// available, or a runtime down).
func (r *run) resolve(pc *pendingCall, c *ToolCall) (*toolEntry, string) {
	if g := r.offeredGroup(c.Name); g != nil {
		order := r.chooseMembers(g)
		if len(order) == 0 {
			pc.failed = true
			return nil, fmt.Sprintf("Error: no tool of group '%s' is available in this run", c.Name)
		}
		pc.group, pc.members = g.Name, order[1:]
		c.Name = order[0]
		pc.call = *c
	}
	e := r.cfg.Tools.lookup(c.Name)
	if e == nil {
		if t := r.builtinTool(c.Name); t != nil {
			e = &toolEntry{tool: t, spec: t.Spec()}
		}
	}
	if e == nil || !r.callable(pc, c.Name) {
		return nil, fmt.Sprintf("Error: Unknown tool '%s'", c.Name)
	}
	if msg, down := r.downTools[c.Name]; down { // its runtime failed: a failure a fallback may stand in for
		pc.failed = true
		return nil, msg
	}
	return e, ""
}

// permission decides a call (L6): the permission hook first (deny and ask are final),
// then the approval rules (first match wins), then RequireApproval ("*" = all) asks and
// the others get ApprovalDefault (allow unless set). rule names the rule that decided.
// A deny, and an allow by a rule, are recorded here (an ask by approve).
func (r *run) permission(c ToolCall) (v PermissionVerdict, why, rule string) {
	by := "default"
	defer func() {
		if v == PermitDeny || v == PermitAllow && rule != "" { // an ask is recorded by approve
			r.record(ApprovalDecision{Call: r.approvalCall(c), Verdict: v, By: by, Rule: rule, Reason: why})
		}
	}()
	if r.cfg.Permission != nil {
		d := r.cfg.Permission(r.ctx, c)
		switch by = "permission"; d.Verdict {
		case PermitDeny:
			return PermitDeny, cmpOr(d.Reason, "denied by the permission hook"), ""
		case PermitAsk:
			return PermitAsk, "", ""
		}
		by = "default"
	}
	if r.cfg.Approvals != nil {
		rv, name, reason, err := r.cfg.Approvals.Rule(r.ctx, r.approvalCall(c))
		by, rule = "rule", name
		switch {
		case err != nil: // a rule that cannot decide: ambiguity is deny
			return PermitDeny, fmt.Sprintf("approval rule %q could not decide: %v", name, err), name
		case rv == PermitDeny:
			return PermitDeny, cmpOr(reason, fmt.Sprintf("denied by approval rule %q", name)), name
		case rv != "":
			return rv, reason, name
		}
		by, rule = "default", ""
	}
	if slices.Contains(r.policy.RequireApproval, c.Name) || slices.Contains(r.policy.RequireApproval, "*") {
		return PermitAsk, "", ""
	}
	if r.policy.ApprovalDefault == PermitDeny {
		return PermitDeny, "approval_default is deny", ""
	}
	return cmpOr(r.policy.ApprovalDefault, PermitAllow), "", ""
}

// approver is the run's Approver: the one its input names, else the agent's.
func (r *run) approver() Approver {
	if r.in.approver != nil {
		return r.in.approver
	}
	return r.cfg.Approver
}

func cmpOr[S ~string](s, def S) S {
	if s == "" {
		return def
	}
	return s
}

// invoke calls the tool with the run's context under the call's deadline. A panic or an
// error becomes an error result. Safe to run on another goroutine.
func (r *run) invoke(pc *pendingCall) {
	ctx := r.work
	limit := r.policy.Timeout
	if pc.timeout > 0 && (limit <= 0 || pc.timeout < limit) {
		limit = pc.timeout
	}
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	start := r.cfg.Driver.Now()
	defer func() {
		pc.dur = r.cfg.Driver.Now().Sub(start)
		if p := recover(); p != nil {
			pc.result = ErrorResult(fmt.Sprintf("Error: tool '%s' panicked: %v", pc.call.Name, p))
			pc.failed = true
		}
	}()
	call := pc.call
	call.Arguments = pc.args
	pc.ctx = callCtx{Context: ctx, id: &pc.call.ID} // beside the run's CallInfo (runctx.go)
	ctx = &pc.ctx
	if a, ok := r.in.Approvals[pc.call.ID]; ok { // the answer to its input request (input.go)
		ctx = context.WithValue(ctx, answerKey{}, a)
	}
	if asker, ok := r.approver().(InputAsker); ok { // one who can answer while the call waits
		call, actx := pc.call, ctx
		ctx = context.WithValue(ctx, askerKey{}, func(req InputRequest) (Approval, error) { return asker.AskInput(actx, call, req) })
	}
	key, hit := r.cacheLookup(ctx, pc) // after every admission check: a hit skips no decision
	if hit {
		return
	}
	res, err := r.cfg.Driver.InvokeTool(ctx, pc.tool, call)
	if err != nil {
		res = r.toolFailed(pc, res, err, limit)
		pc.failed = !pc.pending
	}
	pc.result = res
	r.cacheStore(ctx, pc, key)
}

// toolFailed is the result of a call whose tool returned err: none while it waits for a
// human (pending), else an error result saying why. (Apart from invoke, so that a call
// that succeeds allocates nothing for the error's inspection.)
func (r *run) toolFailed(pc *pendingCall, res ToolResult, err error, limit time.Duration) ToolResult {
	var ir *InputRequiredError
	switch {
	case errors.As(err, &ir):
		pc.pending, pc.input = true, &ir.Request
	case errors.Is(err, ErrApprovalPending):
		pc.pending = true
	case r.outOfTime():
		res = ErrorResult(fmt.Sprintf("Error: tool '%s' stopped: %v (%s)", pc.call.Name, errOutOfTime, r.limits.MaxRunDuration))
	case errors.Is(err, context.DeadlineExceeded) && r.ctx.Err() == nil:
		res = ErrorResult(fmt.Sprintf("Error: tool '%s' timed out after %s", pc.call.Name, limit))
	default:
		res = ErrorResult(fmt.Sprintf("Error: %v", err))
	}
	return res
}

// settle applies the tool_result guardrails to a call's result, counts it and emits the
// events that close it. The result it returns is what the surface keeps.
func (r *run) settle(pc *pendingCall) ToolResult {
	if pc.failed && pc.tool != nil {
		r.noteFailure(pc.call.Name)
	}
	r.tryFallbacks(pc)
	res := pc.result
	if pc.tool != nil && !res.IsError { // before storing: a blocked result's media are never kept
		text, err := r.guardParts(StageToolResult, res.Text(), pc.call.Name, res.Content)
		if err != nil {
			res = ErrorResult("Error: " + err.Error())
		} else if text != res.Text() {
			res.Content = replaceText(res.Content, text)
			res.Structured = nil // a redacted result must not leak through its structured twin
		}
	}
	res = r.storeResult(res) // media is stored, the result keeps references
	status := "ok"
	if res.IsError {
		status = "error"
	}
	r.toolCalls++
	if res.IsError {
		r.toolErrors++
	}
	r.journal.pin()
	defer r.journal.unpin()
	r.journal.emit(EventToolResult, r.journal.pl.toolResult.put(ToolResultData{ID: pc.call.ID, Name: pc.call.Name, Content: res.Text(),
		IsError: res.IsError, DurationMS: pc.dur.Milliseconds(), Refused: pc.refused, Fallback: pc.fallback, Group: pc.group,
		Cached: pc.cached, CacheAgeMS: pc.cacheAge.Milliseconds(), Media: mediaRefs(res.Content)}))
	r.journal.emit(EventStepComplete, r.journal.pl.stepDone.put(StepCompleteData{ID: pc.call.ID, Status: status}))
	return res
}
