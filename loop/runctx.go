package loop

import "context"

// runCtx is the context a run's work starts from: its caller's, plus the values the loop
// keeps for the run, answered by one context instead of a chain of context.WithValue
// (one allocation each, per run): the run's CallInfo (callinfo.go), its journal, which
// plugins' reports go to (notify.go), and the run's ledger (ledger.go). It
// lives in the run's own allocation; the run's cancellation is a context.WithCancelCause
// over it (Agent.start).
type runCtx struct {
	context.Context
	info    CallInfo
	journal *journal
	ledger  *Ledger           // the run's, nested in its caller's
	hints   map[string]string // RunInput.RuntimeHints (runtime.go)
}

func (c *runCtx) Value(key any) any {
	switch key.(type) {
	case callInfoKey:
		return &c.info // CallInfoFrom reads a *CallInfo as well as WithCallInfo's value
	case noticeKey:
		return c.journal
	case ledgerKey:
		if c.ledger != nil {
			return c.ledger
		}
	case hintsKey:
		if c.hints != nil {
			return c.hints
		}
	}
	return c.Context.Value(key)
}

// context builds the run's runCtx over parent and returns it. Hooks, guardrails and
// context strategies see which run they serve (CallInfo); tool calls add their call id
// (callCtx).
func (r *run) context(parent context.Context) context.Context {
	in := r.in
	r.limits = r.cfg.Limits.merge(in.Limits)
	r.rc = runCtx{Context: parent, journal: &r.journal,
		info: CallInfo{SessionID: in.SessionID, RunID: in.RunID, Agent: r.cfg.Name, User: in.User}, hints: in.RuntimeHints}
	r.joinLedger(parent)
	return &r.rc
}

// callCtx is the context of one tool call: the run's, plus the call's id (CallInfo's
// CallID). It lives in the call's pendingCall, so a call adds no allocation for it.
type callCtx struct {
	context.Context
	id *string
}

func (c *callCtx) Value(key any) any {
	if _, ok := key.(callIDKey); ok {
		return c.id
	}
	return c.Context.Value(key)
}
