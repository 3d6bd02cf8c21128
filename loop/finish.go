package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// fallbackSummary is the final text when the summary call itself fails (L9).
const fallbackSummary = "The run stopped (%s) before it finished, and no summary could be produced."

// defaultContinue is the message a BeforeFinal hook injects when it gives none.
const defaultContinue = "Some work is not finished yet. Continue until it is done."

// finalStep handles a response without tool calls: BeforeFinal hooks (L12), then
// structured output (L10), then completion. It reports done when the run ended.
func (r *run) finalStep(msg Message, withSchema bool) next {
	if r.continuations < r.cfg.MaxContinuations {
		for _, h := range r.cfg.Hooks {
			d, err := r.beforeFinal(h, msg)
			if err != nil || d.Verdict != VerdictContinue {
				continue
			}
			r.continuations++
			text := d.Message
			if text == "" {
				text = defaultContinue
			}
			r.appendMessage(UserMessage(text))
			return next{kind: nextRunAgain}
		}
	}
	if r.output != nil {
		return next{kind: nextStructured, msg: msg, withSchema: withSchema}
	}
	return next{kind: nextComplete, reason: ReasonEndTurn, text: r.partial + msg.Text()}
}

// truncMessage answers the calls of an answer cut by max_tokens: their arguments may be
// incomplete, so they are never executed (L15).
const truncMessage = "Error: tool call not executed: your answer was cut off by the output token limit (max_tokens), so its arguments may be incomplete. Retry with a shorter answer."

// continueMessage asks the model to go on after an answer cut by max_tokens (L15).
const continueMessage = "Your answer was cut off by the output token limit. Continue exactly where it stopped, without repeating anything."

// truncated handles an answer cut by max_tokens (L15). Calls get an error result each and
// the model retries, up to MaxTruncationRetries times; text ends the run incomplete,
// unless ContinueOnMaxTokens asks the model to continue (bounded the same way). It
// reports done when the run ended.
func (r *run) truncated(msg Message) next {
	r.truncations++
	more := r.truncations <= r.cfg.MaxTruncationRetries
	if len(msg.ToolCalls) > 0 {
		for _, c := range msg.ToolCalls {
			r.appendMessage(toolMessage(c, ErrorResult(truncMessage)))
		}
		if more {
			return next{kind: nextRunAgain}
		}
		return next{kind: nextIncomplete, reason: ReasonMaxTokens}
	}
	r.partial += msg.Text()
	if more && (r.cfg.ContinueOnMaxTokens || r.in.ContinueOnMaxTokens) {
		r.appendMessage(UserMessage(continueMessage))
		return next{kind: nextRunAgain}
	}
	text := r.partial
	final := Message{Role: RoleAssistant, Content: []Part{TextPart(text)}}
	return next{kind: nextIncomplete, reason: ReasonMaxTokens, final: &final}
}

// structured produces the run's output document (L10). When the schema was not sent
// (tools were in play) one more call is made with tools off and the schema on. Output
// that is not JSON or fails the schema is answered with the error and retried up to
// MaxDecodeRetries times.
func (r *run) structured(msg Message, withSchema bool) RunResult {
	for attempt := 0; ; attempt++ {
		if !withSchema || attempt > 0 {
			resp, err := r.callModel(nil, true)
			if errors.Is(err, errOutOfTime) {
				return r.summarize(ReasonMaxDuration, "")
			}
			if errors.Is(err, errBudget) {
				return r.summarize(ReasonBudgetExceeded, fmt.Sprintf(fallbackSummary, ReasonBudgetExceeded)) // no call to pay for
			}
			if err != nil {
				return r.failOrAbort(err)
			}
			msg = resp.message
			r.appendMessage(msg)
			r.journal.emit(EventAssistantMessage, r.journal.pl.assistant.put(AssistantMessageData{Message: r.forClients(msg)}))
			r.journal.emit(EventUsage, r.journal.pl.usage.put(resp.usage))
		}
		text := msg.Text()
		err := r.output.validate(text)
		if err == nil {
			return r.complete(ReasonStructuredOutput, text, json.RawMessage(text))
		}
		r.journal.emit(EventError, &ErrorData{Kind: "output_decoding", Message: err.Error(), Retryable: attempt < r.cfg.MaxDecodeRetries})
		if attempt >= r.cfg.MaxDecodeRetries {
			return r.end(StatusFailed, ReasonDecodingFailed, nil, nil,
				fmt.Errorf("structured output does not match the schema after %d attempts: %w", attempt+1, err))
		}
		fix := fmt.Sprintf("Your answer is not valid output: %v. Reply with only a JSON document that matches the schema.", err)
		r.appendMessage(UserMessage(fix))
		if cerr := r.ctxErr(); cerr != nil {
			return r.abort(cerr)
		}
	}
}

// summarize ends a run that a limit or policy stopped (L8, L9): one more model call with
// tools off on a temporary copy of the history plus a summary request; its answer, or a
// fixed fallback, is the final. A hook's own final text skips the call.
func (r *run) summarize(reason Reason, text string) RunResult {
	if text == "" {
		resp, err := r.callModelWith(nil, false, []Message{UserMessage(summaryPrompt)})
		switch {
		case err == nil:
			text = resp.message.Text()
			r.journal.emit(EventUsage, r.journal.pl.usage.put(resp.usage))
		case r.ctxErr() != nil:
			return r.abort(r.ctxErr())
		}
		if text == "" { // the call failed, or answered with tool calls only
			text = fmt.Sprintf(fallbackSummary, reason)
		}
	}
	final := Message{Role: RoleAssistant, Content: []Part{TextPart(text)}}
	r.appendMessage(final)
	return r.endFinal(StatusIncomplete, reason, final, nil)
}

// complete ends a run that finished its work.
func (r *run) complete(reason Reason, text string, output json.RawMessage) RunResult {
	final := Message{Role: RoleAssistant, Content: []Part{TextPart(text)}}
	return r.endFinal(StatusCompleted, reason, final, output)
}

// endFinal applies output guardrails and emits the final.
func (r *run) endFinal(status Status, reason Reason, final Message, output json.RawMessage) RunResult {
	text, err := r.guard(StageOutput, final.Text(), "")
	if err != nil {
		text = "[output withheld: " + err.Error() + "]"
		output = nil
	}
	if text != final.Text() {
		final.Content = []Part{TextPart(text)}
	}
	r.journal.emit(EventFinal, r.journal.pl.final.put(FinalData{Text: text, Output: output}))
	p := &cut(&r.msgSlab, 1, msgSlabSize)[0] // RunResult.Final: beside the run's messages
	*p = final
	return r.end(status, reason, p, output, nil)
}

// fail ends the run with an error.
func (r *run) fail(err error) RunResult {
	r.journal.emit(EventError, &ErrorData{Kind: errorKind(err), Message: err.Error()})
	return r.end(StatusFailed, ReasonError, nil, nil, err)
}

// abort ends a cancelled run: no final, the session keeps what was stored (L13).
func (r *run) abort(cause error) RunResult {
	return r.end(StatusAborted, ReasonCancelled, nil, nil, fmt.Errorf("run %s: %w", r.in.RunID, cause))
}

func (r *run) failOrAbort(err error) RunResult {
	if cerr := r.ctxErr(); cerr != nil {
		return r.abort(cerr)
	}
	if errors.Is(err, ErrApprovalPending) {
		return r.end(StatusInterrupted, ReasonApprovalRequired, nil, nil, nil)
	}
	return r.fail(err)
}

func (r *run) end(status Status, reason Reason, final *Message, output json.RawMessage, err error) RunResult {
	// The run record, the queued entries, the end's status and run_finished are one
	// write; run_finished is delivered once it is stored, so that a failure to write is
	// what run_finished (live and stored) reports.
	r.journal.pin()
	rec := RunRecord{ID: r.in.RunID, SessionID: r.in.SessionID, Status: status, Reason: reason,
		Started: r.journal.started, Ended: r.journal.now(), Usage: r.spent()}
	r.journal.saveRun(rec)
	live := r.state
	serr := r.journal.endWrite(func() { r.finished(status, reason, rec) })
	r.journal.unpin()
	if serr == nil {
		if r.journal.run.done { // AppendRun released the session's lease with the final record
			r.a.leaseReleased(runKey{r.in.SessionID, r.in.RunID})
		}
		return r.result(status, reason, final, output, err)
	}
	r.state = live // the held status change was taken back with run_finished
	if err == nil {
		err = serr
	}
	status, reason = StatusFailed, ReasonError
	rec.Status, rec.Reason = status, reason
	r.journal.emit(EventError, &ErrorData{Kind: "error", Message: serr.Error()})
	r.finished(status, reason, rec)
	// The store failed once: the record and the entries are tried apart, so that
	// whatever can still be written (run_finished saying why) is.
	_ = r.cfg.Store.SaveRun(r.sctx, rec)
	_ = r.journal.flush()
	return r.result(status, reason, final, output, err)
}

// finished moves the state machine to the run's end and emits run_finished.
func (r *run) finished(status Status, reason Reason, rec RunRecord) {
	switch status {
	case StatusFailed:
		r.on(onFail)
	case StatusAborted:
		r.on(onAbort)
	case StatusInterrupted: // stays where it waits (awaiting_human) until a later run answers
		r.on(onInterrupt)
	default:
		r.on(onComplete)
	}
	r.journal.emit(EventRunFinished, r.journal.pl.finished.put(RunFinishedData{Status: status, Reason: reason, Usage: rec.Usage,
		StopReason: r.lastStop, PendingCalls: r.clientPending, Metrics: RunMetrics{
			ModelCalls: r.callIndex, ToolCalls: r.toolCalls, ToolErrors: r.toolErrors, Steps: r.toolRounds + r.planSteps, Replans: r.replans,
			Handoffs: r.team.handoffs(), DurationMS: rec.Ended.Sub(r.journal.started).Milliseconds()}}))
}

func (r *run) result(status Status, reason Reason, final *Message, output json.RawMessage, err error) RunResult {
	return RunResult{SessionID: r.in.SessionID, RunID: r.in.RunID, Status: status, Reason: reason,
		Final: final, Output: output, Err: err, Usage: r.spent(), StopReason: r.lastStop, PendingCalls: r.clientPending}
}

func errorKind(err error) string {
	var me *ModelError
	if errors.As(err, &me) {
		return string(me.Kind)
	}
	var se *startError
	if errors.As(err, &se) {
		return "invalid_input"
	}
	return "error"
}

// onStep asks one termination hook about a step. A failing hook is reported and
// ignored: a broken plugin must not end runs on its own.
func (r *run) onStep(h TerminationHook, msg Message) (Decision, error) {
	info := StepInfo{Iteration: r.iteration, Message: msg, Usage: r.usage, ToolCalls: r.toolCalls, History: r.transcript.shared()}
	d, err := safeDecision(func() (Decision, error) { return h.OnStep(r.ctx, info) })
	return r.hookOutcome(h, "on_step", d, err)
}

func (r *run) beforeFinal(h TerminationHook, msg Message) (Decision, error) {
	info := FinalInfo{Iteration: r.iteration, Text: msg.Text(), Continuations: r.continuations, Usage: r.usage, History: r.transcript.shared()}
	d, err := safeDecision(func() (Decision, error) { return h.BeforeFinal(r.ctx, info) })
	return r.hookOutcome(h, "before_final", d, err)
}

func (r *run) hookOutcome(h TerminationHook, point string, d Decision, err error) (Decision, error) {
	if err != nil {
		r.journal.emit(EventError, &ErrorData{Kind: "hook", Message: fmt.Sprintf("hook %q %s: %v", h.Name(), point, err)})
		return Decision{}, err
	}
	if d.Verdict != VerdictProceed {
		r.journal.emit(EventHook, &HookData{Name: h.Name(), Point: point, Verdict: d.Verdict, Reason: d.Reason})
	}
	return d, nil
}

func safeDecision(f func() (Decision, error)) (d Decision, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panicked: %v", p)
		}
	}()
	return f()
}

// guard runs the guardrails of a stage over content and returns the (possibly
// redacted) content, or an error saying which guardrail blocked it. Guardrails fail
// closed: one that errors blocks.
func (r *run) guard(stage Stage, content, tool string) (string, error) {
	return r.guardParts(stage, content, tool, nil)
}

// guardParts is guard with the media of parts described to the guardrails (MediaInfo).
func (r *run) guardParts(stage Stage, content, tool string, parts []Part) (string, error) {
	if len(r.cfg.Guardrails) == 0 {
		return content, nil
	}
	media, err := r.mediaInfo(parts, stage == StageToolResult)
	if err != nil {
		return "", err
	}
	for _, g := range r.cfg.Guardrails {
		res, err := safeGuard(r.ctx, g, GuardInput{Stage: stage, Content: content, Tool: tool, Media: media})
		if err != nil {
			res = GuardResult{Action: GuardBlock, Reason: "guardrail failed: " + err.Error()}
		}
		switch res.Action {
		case GuardBlock:
			r.journal.emit(EventGuardrail, &GuardrailData{Name: g.Name(), Stage: stage, Action: GuardBlock, Reason: res.Reason})
			return "", fmt.Errorf("blocked by guardrail %q at %s: %s", g.Name(), stage, res.Reason)
		case GuardRedact:
			r.journal.emit(EventGuardrail, &GuardrailData{Name: g.Name(), Stage: stage, Action: GuardRedact, Reason: res.Reason})
			content = res.Content
		}
	}
	return content, nil
}

func safeGuard(ctx context.Context, g Guardrail, in GuardInput) (res GuardResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panicked: %v", p)
		}
	}()
	return g.Check(ctx, in)
}
