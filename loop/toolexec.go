package loop

import (
	"encoding/json"
	"fmt"
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

// runTools takes a model's answer through the tool pipeline (L22; L5, L6, L13): admits
// each call in order, runs the ones that pass (up to MaxParallel at once), and stores
// the results as tool messages in the model's call order.
func (r *run) runTools(calls []ToolCall) ([]ToolResult, error) {
	r.on(onRunTools)
	b := &batch{r: r}
	b.results, b.prepared = b.resultBuf[:0], b.preparedBuf[:0]
	if len(calls) > len(b.resultBuf) {
		b.results, b.prepared = make([]ToolResult, 0, len(calls)), make([]*pendingCall, 0, len(calls))
	}
	b.results, b.prepared = b.results[:len(calls)], b.prepared[:len(calls)]
	if r.policy.MaxParallel > 1 && len(calls) > 1 {
		b.sem = make(chan struct{}, r.policy.MaxParallel)
	}
	for i, c := range calls {
		if err := r.ctxErr(); err != nil { // L13: checked before each tool
			b.finishUpTo(i) // keep what already ran
			return nil, err
		}
		pc, err := b.admit(c)
		if err != nil {
			b.finishUpTo(i) // wait for the calls already running
			return nil, err
		}
		b.prepared[i] = pc
		b.start(pc)
		if b.sem == nil {
			b.finishUpTo(i + 1)
		}
	}
	b.finishUpTo(len(calls))
	return b.results, nil
}

// batch is one answer's calls on their way through the pipeline.
type batch struct {
	r        *run
	prepared []*pendingCall
	results  []ToolResult
	finished int           // results recorded so far, in call order
	sem      chan struct{} // parallel calls' slots; nil runs them one at a time
	// The usual answer has one call: its result and call live in the batch's allocation.
	resultBuf   [1]ToolResult
	preparedBuf [1]*pendingCall
	firstCall   pendingCall
	used        bool // firstCall is taken
}

// newCall is a zero pendingCall for the next call of the batch.
func (b *batch) newCall() *pendingCall {
	if b.used {
		return new(pendingCall)
	}
	b.used = true
	return &b.firstCall
}

// admit announces a call and admits it; a client tool's call waits for the caller
// (L16); an admitted call is stored before it runs (L21).
func (b *batch) admit(c ToolCall) (*pendingCall, error) {
	r := b.r
	r.announce(c)
	if r.isClient(c.Name) && !r.toolsOff() {
		r.clientPending = append(r.clientPending, c)
		return &pendingCall{call: c, client: true}, nil
	}
	pc, err := r.admitInto(b.newCall(), c)
	if err == nil && pc.tool != nil {
		err = r.journal.flush()
	}
	return pc, err
}

// start invokes an admitted call, on a goroutine of its own when the batch is parallel.
func (b *batch) start(pc *pendingCall) {
	switch {
	case pc.tool == nil: // already has its error result, or the caller runs it
	case b.sem != nil:
		pc.done = make(chan struct{})
		b.sem <- struct{}{}
		b.r.cfg.Driver.Go(func() {
			defer func() { <-b.sem; close(pc.done) }()
			b.r.invoke(pc)
		})
	default:
		b.r.invoke(pc)
	}
}

// finishUpTo settles and stores the results in call order up to n, waiting for calls
// still running.
func (b *batch) finishUpTo(n int) {
	r := b.r
	for ; b.finished < n; b.finished++ {
		pc := b.prepared[b.finished]
		if pc.client {
			continue
		}
		if pc.done != nil {
			<-pc.done
		}
		if pc.pending { // waits for a nested approval or an input: no result yet (L14 re-runs it)
			r.awaitInput(pc)
			r.nestedPending = true
			continue
		}
		b.results[b.finished] = r.settle(pc)
		r.appendMessage(toolMessage(pc.asked(), b.results[b.finished]))
	}
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

// isClient reports whether name is one of the run's client tools (L16).
func (r *run) isClient(name string) bool {
	for _, s := range r.in.ClientTools {
		if s.Name == name {
			return true
		}
	}
	return false
}

// isOffered reports whether the acting agent's model was offered the tool.
func (r *run) isOffered(name string) bool {
	for _, s := range r.offerWithCache(r.offered) {
		if s.Name == name {
			return true
		}
	}
	return false
}
