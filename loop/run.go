package loop

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// run is one execution of the loop. It is used by one goroutine only.
type run struct {
	a    *Agent
	cfg  *Config
	ctx  context.Context
	sctx context.Context // for store writes: not cancelled, so an abort still stores its end
	// work is ctx with the run's deadline (Limits.MaxRunDuration), for model and tool
	// calls: a call in flight when the time is up ends, and the run gets its summary.
	work     context.Context
	stopWork context.CancelFunc
	cancel   context.CancelCauseFunc
	in       RunInput

	policy  ToolPolicy
	limits  Limits
	offered []ToolSpec
	// outputsTrimmed: a model input of this run held a cut tool output, so the run
	// offers read_tool_output (toolcache.go).
	outputsTrimmed bool
	output         *argsSchema // compiled OutputSchema, nil without one

	state   State
	journal journal // events, their numbering and the session's entries (L17, L21)

	transcript transcript // the session's conversation as the model sees it

	usage         Usage   // this run's own model calls
	ledger        *Ledger // the run's spend, nested in its caller's (ledger.go)
	iteration     int
	toolRounds    int
	callIndex     int
	counters      counters // tool calls per run, per tool and per argument set (L8)
	continuations int
	deltaSeen     []int // by call index: highest delta seq emitted (L14)
	deltaBuf      [4]int
	// rc is the values ctx carries for the run (runctx.go); ownLedger is the run's
	// ledger; msgSlab is where appendMessage keeps the run's messages. Each saves
	// allocations a run would otherwise make (BENCHMARKS.md).
	rc        runCtx
	ownLedger Ledger
	msgSlab   []Message
	attached  map[string][]byte // attachment bytes loaded for model calls (attach.go)

	lastStop      StopReason // of the last model answer, for run_finished (L15)
	truncations   int        // answers cut by max_tokens so far (L15)
	partial       string     // text of answers cut by max_tokens and continued (L15)
	clientPending []ToolCall // client tool calls waiting for the caller (L16)

	team        teamState // hand-offs (team.go)
	maxHandoffs int
	allowCycles bool
	subRuns     int              // ask_ calls made
	toolCalls   int              // tool results stored, for the run's metrics
	answers     approvalRequests // what RunInput.Approvals may answer (approvalbind.go)
	toolErrors  int
	downTools   map[string]string // tool → its error result: its runtime failed (runtime.go)
	// groupMembers are the offered tools before their groups replaced them, and
	// failedTools the tools whose calls failed in this run (toolgroup.go).
	groupMembers []ToolSpec
	failedTools  map[string]bool

	quiet     bool       // model calls emit no deltas (the planner's and evaluator's)
	out       *outFilter // Config.OutputFilter's state; nil without one (outfilter.go)
	replans   int        // plan mode (planrun.go)
	planSteps int
	stepErr   error // a plan step's call ended the run (planrun.go)
	// nestedPending: a call of this run waits for an approval inside a nested run
	// (ask_NAME); the run ends interrupted/approval_required after its step.
	nestedPending bool
}

// init readies a run that start made (with its a, cfg and in) to execute under ctx, the
// context r.context gave, cancelled by cancel.
func (r *run) init(ctx context.Context, cancel context.CancelCauseFunc, emit func(Event)) {
	cfg, in := r.cfg, r.in
	r.cancel = cancel
	r.policy = cfg.ToolPolicy.merge(in.ToolPolicy).withDefaults()
	r.state, r.journal.started = StateIdle, cfg.Driver.Now()
	r.ctx, r.sctx = ctx, context.WithoutCancel(ctx)
	// Field by field: the journal is zero here, and a literal of it would be built in a
	// temporary on the stack (1.8 KiB of frame, which grows a run goroutine's stack).
	j := &r.journal
	j.sessions, j.ctx, j.session, j.runID = cfg.Store, r.sctx, in.SessionID, in.RunID
	j.agent, j.traceID, j.clock, j.emitFn = cfg.Name, in.TraceID, cfg.Driver, emit
	j.outage, j.scrub = outageWait{max: cfg.StoreOutage, ctx: ctx}, cfg.Scrub
	j.noDeltas = len(cfg.Guardrails) > 0
	j.queued = j.queuedBuf[:0]
	j.result, j.writer = in.directResult, runWriterOf(ctx, in.SessionID)
	_, j.monotonic = cfg.Driver.(GoDriver)
	j.newEventBlock()
	r.deltaSeen = r.deltaBuf[:0]
	if cfg.OutputFilter != nil {
		r.out = &outFilter{make: cfg.OutputFilter, call: -1}
	}
	r.team.first = cfg.Name
	r.maxHandoffs, r.allowCycles = cfg.MaxHandoffs, cfg.AllowCycles
	r.offerTools(in.AllowedTools, in.ToolOrder)
	r.work, r.stopWork = ctx, func() {}
	if d := r.limits.MaxRunDuration; d > 0 {
		r.work, r.stopWork = context.WithTimeout(ctx, d)
	}
}

// errOutOfTime ends a model call cut short by the run's deadline.
var errOutOfTime = errors.New("the run reached max_run_duration")

// outOfTime reports whether the run's deadline has passed (and it was not aborted).
func (r *run) outOfTime() bool {
	return r.work.Err() != nil && r.ctx.Err() == nil
}

// execute runs the loop and always ends with run_finished. A panic anywhere below (a
// model, a hook) fails the run instead of the process.
func (r *run) execute() (res RunResult) {
	defer func() {
		if p := recover(); p != nil {
			r.journal.unpin() // a panic between pin and unpin: the failure's events read the clock
			res = r.fail(fmt.Errorf("internal error: %v", p))
		}
	}()
	// Event seq continues the session's numbering (L17): loaded before the first emit.
	// Only the session's head: its messages, not its events (head.go).
	head, lerr := r.loadHead()
	r.journal.evSeq = head.LastEventSeq
	r.journal.emit(EventRunStarted, r.journal.pl.runStarted.put(RunStartedData{Model: r.cfg.ModelName, User: r.in.User, Parent: r.parentRun()}))
	r.on(onPrepare)
	r.journal.saveRun(RunRecord{ID: r.in.RunID, SessionID: r.in.SessionID, Started: r.journal.started}) // with the first flush
	if lerr != nil {
		return r.failOrAbort(lerr)
	}
	if r.in.direct != nil {
		return r.directCall(head)
	}
	if r.in.sample != nil {
		return r.sampleRun(head)
	}
	if err := r.prepare(head); err != nil {
		return r.failOrAbort(err)
	}
	r.prepareRuntimes()
	if len(r.clientPending) > 0 { // L16: an unresolved client call is still unanswered
		return r.end(StatusInterrupted, ReasonClientToolCall, nil, nil, nil)
	}
	if r.cfg.Mode == ModePlan && !r.in.forceReact {
		return r.planLoop()
	}
	return r.iterate()
}

// prepare loads the session, stores the system prompt once (L1), runs input guardrails,
// executes tool calls a crashed run left without results (L14) and appends the input.
func (r *run) prepare(head SessionHead) error {
	if len(r.in.OutputSchema) > 0 {
		s, err := compileSchema("output", r.in.OutputSchema)
		if err != nil {
			return fmt.Errorf("output schema: %w", err)
		}
		r.output = s
	}
	r.journal.seq = r.transcript.project(head)
	if head.LastSeq == 0 && r.cfg.SystemPrompt != "" {
		// L1: the system prompt is the session's first entry, ahead of the events
		// already queued for this run.
		queued := r.journal.pending
		r.journal.pending = nil
		r.appendMessage(Message{Role: RoleSystem, Content: []Part{TextPart(r.cfg.SystemPrompt)}})
		r.journal.pending = queued // after the system entry
	}
	input, err := r.guardInput()
	if err != nil {
		return err
	}
	if input, err = r.storeMessages(input); err != nil {
		return err
	}
	if pendingCalls := r.transcript.unresolvedCalls(); len(pendingCalls) > 0 {
		if input, err = r.resume(pendingCalls, input); err != nil || len(r.clientPending) > 0 {
			return err // a client call still unanswered: the input waits for it (L16)
		}
	} else if len(input) == 0 && (len(r.transcript.history) == 0 || r.transcript.history[len(r.transcript.history)-1].Role == RoleAssistant) {
		return &startError{errors.New("loop: no input messages and nothing pending in the session")}
	}
	for _, m := range input {
		r.appendMessage(m)
	}
	return nil
}

// guardInput is the run's input messages after the input guardrails; the caller's slice
// is not modified (without guardrails it is returned as it is: nothing changes it).
func (r *run) guardInput() ([]Message, error) {
	if len(r.cfg.Guardrails) == 0 {
		return r.in.Messages, nil
	}
	input := make([]Message, len(r.in.Messages))
	copy(input, r.in.Messages)
	for i := range input {
		if input[i].Role != RoleUser {
			continue
		}
		text, err := r.guardParts(StageInput, input[i].Text(), "", input[i].Content)
		if err != nil {
			return nil, err
		}
		if text != input[i].Text() {
			input[i].Content = replaceText(input[i].Content, text)
		}
	}
	return input, nil
}

// resume settles the calls the session left without results: the ones the input
// answers (L16: the host never runs a call the caller answered), then the rest, run
// again (L14). It returns the input left to append.
func (r *run) resume(pendingCalls []ToolCall, input []Message) ([]Message, error) {
	rest, others, err := r.resolveSupplied(pendingCalls, input)
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		if _, err := r.runTools(rest); err != nil {
			return nil, err
		}
		if r.nestedPending {
			return nil, ErrApprovalPending
		}
	}
	return others, nil
}

// iterate is the main loop (L2), and the one place that decides what happens next:
// each step returns its decision (a next), and iterate performs it. Reading a run
// starts here.
func (r *run) iterate() RunResult {
	for {
		n := r.step()
		if n.handoff { // a transfer the step accepted: the run goes on under the target
			r.handOff()
		}
		if n.kind != nextRunAgain {
			return r.finish(n)
		}
	}
}

// step is one ReAct step: cancellation, limits, the model call, storing the answer,
// then the decision the answer calls for (L2, L4).
func (r *run) step() next {
	if err := r.ctxErr(); err != nil {
		return aborted(err)
	}
	// The next step is a model call (the run's or the summary's): entered here, not
	// after the tools, so a run a done tool ended never reports model_running.
	r.on(onCallModel)
	if reason := r.limitHit(); reason != "" {
		return summary(reason, "")
	}
	r.iteration++
	withSchema := r.output != nil && len(r.offered) == 0
	resp, err := r.callModel(r.offered, withSchema)
	switch {
	case errors.Is(err, errOutOfTime):
		return summary(ReasonMaxDuration, "")
	case errors.Is(err, errBudget):
		return summary(ReasonBudgetExceeded, fmt.Sprintf(fallbackSummary, ReasonBudgetExceeded)) // no call to pay for
	case err != nil:
		return failedOrAborted(err)
	}
	msg := resp.message
	r.answered(resp)
	switch {
	case resp.stop == StopContentFilter: // L15: a filtered answer is not acted on
		r.refuseCalls(msg.ToolCalls, 0, ReasonContentFilter)
		return next{kind: nextFailWith, reason: ReasonContentFilter, err: errors.New("the provider's content filter stopped the model's answer")}
	case resp.stop == StopMaxTokens:
		return r.truncated(msg)
	case len(msg.ToolCalls) > 0: // L4: calls present ⇒ run them
		return r.toolStep(msg)
	}
	return r.finalStep(msg, withSchema)
}

// answered stores the model's answer and emits what it says (L2).
func (r *run) answered(resp response) {
	msg := resp.message
	r.journal.pin()
	defer r.journal.unpin()
	r.appendMessage(msg)
	if msg.Reasoning != "" {
		r.journal.emit(EventReasoning, r.journal.pl.text.put(TextData{Text: r.filtered(msg.Reasoning)}))
	}
	if len(msg.ToolCalls) > 0 && msg.Text() != "" {
		r.journal.emit(EventText, r.journal.pl.text.put(TextData{Text: r.filtered(msg.Text())}))
	}
	r.lastStop = resp.stop
	r.journal.emit(EventAssistantMessage, r.journal.pl.assistant.put(AssistantMessageData{Message: r.forClients(msg), StopReason: resp.stop}))
	r.journal.emit(EventUsage, r.journal.pl.usage.put(resp.usage))
}

// toolStep applies the decision chain (L4, L8) and runs the calls. It reports done when
// the run ended.
func (r *run) toolStep(msg Message) next {
	stopAt, reason := r.checkCaps(msg.ToolCalls)
	if stopAt < 0 {
		for _, h := range r.cfg.Hooks {
			d, err := r.onStep(h, msg)
			if err != nil || d.Verdict != VerdictStop {
				continue
			}
			r.refuseCalls(msg.ToolCalls, 0, ReasonHookStop)
			return summary(ReasonHookStop, d.Message)
		}
	}
	calls := msg.ToolCalls
	if stopAt >= 0 {
		calls = calls[:stopAt]
	}
	r.toolRounds++
	results, err := r.runTools(calls)
	if err != nil {
		return failedOrAborted(err)
	}
	if stopAt >= 0 {
		r.refuseCalls(msg.ToolCalls, stopAt, reason)
		return summary(reason, "")
	}
	if r.nestedPending { // a nested run waits for a human: so does this one (L6)
		return next{kind: nextInterrupt, reason: ReasonApprovalRequired}
	}
	if len(r.clientPending) > 0 { // L16: the caller runs these
		return next{kind: nextInterrupt, reason: ReasonClientToolCall}
	}
	handoff, refused := r.transferState()
	if refused && !handoff { // a transfer past max_handoffs, and none accepted
		return summary(ReasonMaxHandoffs, "")
	}
	for _, res := range results {
		if res.Done {
			text := res.Final
			if text == "" {
				text = msg.Text()
			}
			return next{kind: nextComplete, reason: ReasonDoneTool, text: text, output: res.Structured, handoff: handoff}
		}
	}
	return next{kind: nextRunAgain, handoff: handoff}
}

// limitHit reports the first limit the run has reached (L9), or "".
func (r *run) limitHit() Reason {
	l := r.limits
	switch {
	case l.MaxIterations > 0 && r.iteration >= l.MaxIterations:
		return ReasonMaxIterations
	case l.MaxToolRounds > 0 && r.toolRounds >= l.MaxToolRounds:
		return ReasonMaxToolRounds
	case l.MaxRunDuration > 0 && (r.outOfTime() || r.cfg.Driver.Now().Sub(r.journal.started) >= l.MaxRunDuration):
		return ReasonMaxDuration
	case l.MaxTokens > 0 && r.usage.TotalTokens >= l.MaxTokens,
		l.MaxCostUSD > 0 && r.usage.CostUSD >= l.MaxCostUSD, r.ledger.Exhausted():
		return ReasonBudgetExceeded
	}
	return ""
}

func (r *run) ctxErr() error {
	if r.ctx.Err() != nil {
		return context.Cause(r.ctx)
	}
	return nil
}

// appendMessage queues the message for the store, after the events queued before it,
// and adds it to the history. It is written with the step's other entries at the next
// flush (L21); a failure to write it fails the run there.
//
// The stored copy is cut from a slab of the run's: a message is never changed once
// appended (the store may keep it), so messages can share an allocation.
func (r *run) appendMessage(m Message) {
	p := &cut(&r.msgSlab, 1, msgSlabSize)[0]
	*p = m
	seq := r.journal.queue(Entry{RunID: r.in.RunID, Time: r.journal.now(), Kind: EntryMessage, Message: p})
	r.transcript.add(p, seq)
}

// msgSlabSize is the least a new slab of messages holds: a one-step run appends five
// (system, user, call, result, answer), and its RunResult.Final is a sixth.
const msgSlabSize = 6

// resolveSupplied stores the tool messages of input that answer pending calls, in call
// order, and returns the calls still unanswered and the rest of the input (L16).
func (r *run) resolveSupplied(pending []ToolCall, input []Message) ([]ToolCall, []Message, error) {
	supplied := map[string]Message{}
	rest := input[:0:0]
	for _, m := range input {
		if m.Role == RoleTool && slices.ContainsFunc(pending, func(c ToolCall) bool { return c.ID == m.ToolCallID }) {
			if _, dup := supplied[m.ToolCallID]; dup {
				return nil, nil, &startError{fmt.Errorf("loop: two results for tool call %q", m.ToolCallID)}
			}
			supplied[m.ToolCallID] = m
			continue
		}
		rest = append(rest, m)
	}
	var left []ToolCall
	for _, c := range pending {
		m, ok := supplied[c.ID]
		if !ok {
			left = append(left, c)
			continue
		}
		if m.Name == "" {
			m.Name = c.Name
		}
		r.journal.emit(EventToolResult, r.journal.pl.toolResult.put(ToolResultData{ID: c.ID, Name: c.Name, Content: m.Text()}))
		r.journal.emit(EventStepComplete, r.journal.pl.stepDone.put(StepCompleteData{ID: c.ID, Status: "ok"}))
		r.appendMessage(m)
	}
	return left, rest, nil
}
