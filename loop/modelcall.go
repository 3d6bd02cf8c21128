package loop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// summaryPrompt is the user message of the tools-off summary call (L9).
const summaryPrompt = "The run has to stop now. Without calling any tools, summarise what was done so far, what the results were, and what remains unfinished."

// response is one assembled model answer with its normalised stop reason (L15).
type response struct {
	message Message
	usage   Usage
	stop    StopReason
}

// callModel builds the context and calls the model with retries (L3), compacting and
// retrying on context overflow (L11). tools are the specs to offer; withSchema sends the
// output schema as the response format.
func (r *run) callModel(tools []ToolSpec, withSchema bool) (response, error) {
	return r.callModelWith(tools, withSchema, nil)
}

// callModelWith is callModel with extra messages appended to the built context and not
// stored: the summary call's temporary copy.
func (r *run) callModelWith(tools []ToolSpec, withSchema bool, extra []Message) (response, error) {
	overflow := false
	for compactions := 0; ; compactions++ {
		msgs, err := r.buildContext(overflow)
		if err != nil {
			return response{}, err
		}
		msgs = append(msgs, extra...)
		tools := r.offerWithCache(tools)
		if extra == nil { // the summary call (L9) is the one call a spent budget still makes
			if err := r.checkBudget(msgs); err != nil {
				return response{}, err
			}
		}
		if msgs, err = r.withAttachments(msgs); err != nil { // the model gets the bytes, never the store
			return response{}, err
		}
		req := Request{
			Model:     r.cfg.ModelName,
			Messages:  msgs,
			Tools:     tools,
			MaxTokens: 0,
			Metadata: RequestMetadata{SessionID: r.in.SessionID, RunID: r.in.RunID,
				CallIndex: r.callIndex, Extra: r.in.Metadata},
		}
		if r.cfg.PromptCache { // the run's calls share their prefix: one key per agent and session
			req.PromptCacheKey = r.cfg.Name + "\x00" + r.in.SessionID
		}
		if withSchema {
			req.ResponseFormat = r.in.OutputSchema
		}
		if len(tools) > 0 && r.callIndex == 0 {
			// The run's tool choice applies to its first model call only: "required" on
			// every call would never let the model answer (the next calls are "auto").
			req.ToolChoice = cmpOr(r.in.ToolChoice, r.cfg.ToolChoice)
		}
		ctx := r.work
		if extra != nil {
			// The summary call is made after the run's deadline, so it gets its own: a
			// hung provider must not hang the end of the run (L9).
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(r.ctx, r.summaryTimeout())
			defer cancel()
		}
		if err := r.journal.flush(); err != nil { // the step so far is stored before the call (L21)
			return response{}, err
		}
		resp, err := r.retrying(ctx, req)
		if err != nil && isOverflow(err) && compactions < r.cfg.MaxOverflowRetries {
			overflow = true
			continue
		}
		return resp, err
	}
}

// IsSummaryCall reports whether req is the tools-off summary call a run makes when a
// limit stopped it (L9): a model that does work of its own on a call (a merge agent's,
// which asks other agents) answers it without doing any, and the run ends with its fixed
// summary.
func IsSummaryCall(req Request) bool {
	n := len(req.Messages)
	return n > 0 && req.Messages[n-1].Role == RoleUser && req.Messages[n-1].Text() == summaryPrompt
}

// isOverflow reports a context_overflow model error (apart from callModelWith, so that a
// call that succeeds allocates nothing for the error's inspection).
func isOverflow(err error) bool {
	var me *ModelError
	return errors.As(err, &me) && me.Kind == KindContextOverflow
}

// errBudget ends a model call the budget cannot pay for (L18).
var errBudget = errors.New("the next model call would exceed the run's token or cost budget")

// checkBudget refuses a call whose estimated prompt alone would take the run past
// max_tokens or max_cost_usd (L18): budgets are checked before spending, not only after.
func (r *run) checkBudget(msgs []Message) error {
	l := r.limits
	own := l.MaxTokens > 0 || l.MaxCostUSD > 0
	if !own && !r.ledger.limited() {
		return nil
	}
	est := EstimateTokens(msgs)
	cost := float64(est) * r.cfg.Pricing.PromptPerMTok / 1e6
	if own && ((l.MaxTokens > 0 && r.usage.TotalTokens+est > l.MaxTokens) ||
		(l.MaxCostUSD > 0 && r.usage.CostUSD+cost > l.MaxCostUSD)) {
		return errBudget
	}
	return r.ledger.Admit(est) // the run's budgets and its callers', on everything spent
}

// defaultSummaryTimeout bounds the summary call of a run without max_run_duration.
const defaultSummaryTimeout = 2 * time.Minute

func (r *run) summaryTimeout() time.Duration {
	if d := r.limits.MaxRunDuration; d > 0 {
		return d
	}
	return defaultSummaryTimeout
}

// retrying makes one logical model call: attempts until success, a non-retryable error
// or the attempt budget. Every failed attempt emits an error event.
func (r *run) retrying(ctx context.Context, req Request) (response, error) {
	r.on(onCallModel)
	r.callIndex++
	req.Metadata.CallIndex = r.callIndex
	policy := r.cfg.Retry
	for attempt := 1; ; attempt++ {
		resp, err := r.streamOnce(ctx, req)
		if err == nil {
			r.charge(resp.usage)
			return resp, nil
		}
		if cerr := r.ctxErr(); cerr != nil {
			return response{}, cerr
		}
		if ctx.Err() != nil { // the run's deadline, not an abort
			return response{}, errOutOfTime
		}
		if errors.Is(err, errBudget) { // a model whose work the ledger refused (a merge agent's asks)
			return response{}, err
		}
		me := asModelError(err)
		if me == nil { // a context error the model produced on its own
			me = &ModelError{Kind: KindTransport, Message: err.Error(), Retryable: true}
		}
		retry := policy.retryable(me) && attempt < policy.MaxAttempts
		msg := me.Message
		if me.RetryAfter > 0 {
			msg += fmt.Sprintf(" (retry after %s)", me.RetryAfter)
		}
		r.journal.emit(EventError, &ErrorData{Kind: string(me.Kind), Message: msg, Retryable: retry})
		if !retry {
			if policy.retryable(me) {
				return response{}, fmt.Errorf("model call failed after %d attempts: %w", attempt, me)
			}
			return response{}, fmt.Errorf("model call failed: %w", me)
		}
		if err := r.cfg.Driver.Sleep(ctx, policy.delay(attempt, me.RetryAfter, r.cfg.Driver.Jitter)); err != nil {
			if cerr := r.ctxErr(); cerr != nil {
				return response{}, cerr
			}
			return response{}, errOutOfTime
		}
	}
}

// streamOnce reads one streamed response and assembles the assistant message. A panic
// in the model becomes an error.
func (r *run) streamOnce(ctx context.Context, req Request) (resp response, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &ModelError{Kind: KindProvider, Message: fmt.Sprintf("model panicked: %v", p)}
		}
	}()
	st, err := r.cfg.Driver.StreamModel(ctx, r.cfg.Model, req)
	if err != nil {
		return response{}, err
	}
	if st == nil {
		return response{}, &ModelError{Kind: KindProvider, Message: "model returned no stream"}
	}
	defer st.Close()
	// Two marks (L14): within this stream the assembler drops a delta whose seq was
	// already read (a replay); across attempts of one call, the message is rebuilt from
	// the new stream but deltas that clients already saw are not emitted again.
	ci := req.Metadata.CallIndex
	for len(r.deltaSeen) <= ci {
		r.deltaSeen = append(r.deltaSeen, 0)
	}
	asm := assembler{callIndex: ci}
	for {
		d, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return response{}, err
		}
		if asm.add(d) {
			r.relay(ci, d)
		}
	}
	msg, usage, stop, err := asm.message()
	if err != nil {
		return response{}, err
	}
	// The stream is complete: clients close the streamed message now, before the loop
	// stores it and runs the step's bookkeeping.
	if !r.quiet {
		r.flushDeltas(ci, "") // what the output filter held of the answer's words
		r.journal.emit(EventModelDelta, r.journal.pl.delta.put(ModelDeltaData{CallIndex: ci, Kind: DeltaFinish, Text: string(stop)}))
	}
	return response{message: msg, usage: r.price(usage), stop: stop}, nil
}

// relay emits a delta of call ci to clients, unless the call is quiet or they saw it in
// an earlier attempt (L14).
func (r *run) relay(ci int, d Delta) {
	if r.quiet || (d.Seq != 0 && d.Seq <= r.deltaSeen[ci]) {
		return
	}
	if d.Seq != 0 {
		r.deltaSeen[ci] = d.Seq
	}
	switch {
	case (d.Kind == DeltaText || d.Kind == DeltaReasoning) && r.out != nil:
		if text := r.filterDelta(ci, d, d.Text); text != "" {
			r.emitDelta(ci, d, text, ToolCallRef{})
		}
	case d.Kind == DeltaText, d.Kind == DeltaReasoning:
		r.emitDelta(ci, d, d.Text, ToolCallRef{})
	case d.Kind == DeltaToolCall && d.ToolCall != nil:
		if r.out != nil {
			r.flushDeltas(ci, "") // the words before the call go out before it
		}
		tc := d.ToolCall
		r.emitDelta(ci, d, tc.Arguments, ToolCallRef{Index: tc.Index, ID: tc.ID, Name: tc.Name})
	}
}

func (r *run) emitDelta(callIndex int, d Delta, text string, ref ToolCallRef) {
	r.journal.emit(EventModelDelta, r.journal.pl.delta.put(ModelDeltaData{CallIndex: callIndex, Seq: d.Seq, Kind: d.Kind, Text: text, ToolCall: ref}))
}

func (r *run) price(u Usage) Usage { return priced(u, r.cfg.Pricing) }

// priced fills in a usage's total and, when the provider reported none, its cost.
func priced(u Usage, p Pricing) Usage {
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	if u.CostUSD == 0 {
		u.CostUSD = p.Cost(u)
	}
	return u
}

// Cost is what a usage costs at these prices, in US dollars: the prompt tokens read from
// the provider's prompt cache at CachedPromptPerMTok when it is set.
func (p Pricing) Cost(u Usage) float64 {
	prompt := float64(u.PromptTokens) * p.PromptPerMTok
	if p.CachedPromptPerMTok > 0 {
		prompt -= float64(min(u.CacheReadTokens, u.PromptTokens)) * (p.PromptPerMTok - p.CachedPromptPerMTok)
	}
	return (prompt + float64(u.CompletionTokens)*p.CompletionPerMTok) / 1e6
}
