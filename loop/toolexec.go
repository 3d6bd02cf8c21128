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
			if pc.pending { // waits for a nested approval: no result yet (L14 re-runs it)
				r.nestedPending = true
				continue
			}
			results[finished] = r.settle(pc)
			r.appendMessage(toolMessage(pc.call, results[finished]))
		}
	}
	for i, c := range calls {
		if err := r.ctxErr(); err != nil { // L13: checked before each tool
			finishUpTo(i) // keep what already ran
			return nil, err
		}
		r.announce(c)
		if r.isClient(c.Name) {
			prepared[i] = &pendingCall{call: c, client: true}
			r.clientPending = append(r.clientPending, c)
			continue
		}
		pc, err := r.admit(c)
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
	for _, s := range r.offered {
		if s.Name == name {
			return true
		}
	}
	return false
}
