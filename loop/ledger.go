package loop

import (
	"context"
	"sync"
)

// Ledger is the spend of one run: its own model calls, those of the runs it nests
// (ask_NAME, plan steps done as sub-runs, the agents a merge agent asks), those plugins
// make on its behalf (create_message) and the embeddings the host makes for it (memory
// recall and the remember tool, host/embed.go). Every one of them is checked against the
// run's token and cost budgets before it is made (L18) and charged after, so no surface
// spends outside the budget the caller set. A nested run's ledger has its caller's as
// parent: a call is admitted only if every ledger up to the top-level run's can pay for
// it, and charged to each of them, so a run's budgets bound everything it nests, at any
// depth, and its usage is all of it.
//
// The run puts its ledger on the context of everything it calls (LedgerFrom), so a host
// serving a plugin's model call finds the ledger to charge without a wider interface.
type Ledger struct {
	mu      sync.Mutex
	limits  Limits
	pricing Pricing
	usage   Usage
	calls   int     // calls charged (model calls and embeddings)
	parent  *Ledger // the ledger of the run this one is nested in, or nil
}

type ledgerKey struct{}

// LedgerFrom returns the ledger of the run ctx belongs to, or nil outside a run.
func LedgerFrom(ctx context.Context) *Ledger {
	l, _ := ctx.Value(ledgerKey{}).(*Ledger)
	return l
}

// Admit reports errBudget (ErrBudgetExceeded) when a model call whose prompt is
// estimated at promptTokens would take the run, or a run it is nested in, past its token
// or cost budget (L18).
func (l *Ledger) Admit(promptTokens int) error {
	return l.AdmitAt(promptTokens, l.pricing)
}

// AdmitAt is Admit for a call priced otherwise than the run's model (an embedding, at
// its provider's prices).
func (l *Ledger) AdmitAt(promptTokens int, p Pricing) error {
	for ; l != nil; l = l.parent {
		l.mu.Lock()
		err := l.admitLocked(promptTokens, p)
		l.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

func (l *Ledger) admitLocked(promptTokens int, p Pricing) error {
	lim := l.limits
	if lim.MaxTokens <= 0 && lim.MaxCostUSD <= 0 {
		return nil
	}
	cost := float64(promptTokens) * p.PromptPerMTok / 1e6
	if (lim.MaxTokens > 0 && l.usage.TotalTokens+promptTokens > lim.MaxTokens) ||
		(lim.MaxCostUSD > 0 && l.usage.CostUSD+cost > lim.MaxCostUSD) {
		return errBudget
	}
	return nil
}

// Charge adds a model call's usage, priced with the run's Pricing when the provider
// reported no cost, to this ledger and every one it is nested in, and returns it as
// charged.
func (l *Ledger) Charge(u Usage) Usage {
	return l.ChargeAt(u, l.pricing)
}

// ChargeAt is Charge for a call priced otherwise than the run's model: with p when the
// provider reported no cost. It adds to the same spend Charge does: there is one.
func (l *Ledger) ChargeAt(u Usage, p Pricing) Usage {
	u = priced(u, p)
	for a := l; a != nil; a = a.parent {
		a.mu.Lock()
		a.usage = a.usage.Add(u)
		a.calls++
		a.mu.Unlock()
	}
	return u
}

// Usage is what the run and everything it nests spent so far.
func (l *Ledger) Usage() Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.usage
}

// limited reports whether the ledger, or one it is nested in, has a budget at all.
func (l *Ledger) limited() bool {
	for ; l != nil; l = l.parent {
		if l.limits.MaxTokens > 0 || l.limits.MaxCostUSD > 0 {
			return true
		}
	}
	return false
}

// Exhausted reports whether the spend reached a budget of this ledger or of one it is
// nested in (L9): the run must make no more calls but its summary. Work that starts
// runs of its own on the run's behalf (a merge agent's asks) checks it before starting
// the next.
func (l *Ledger) Exhausted() bool {
	for ; l != nil; l = l.parent {
		l.mu.Lock()
		lim, u := l.limits, l.usage
		l.mu.Unlock()
		if (lim.MaxTokens > 0 && u.TotalTokens >= lim.MaxTokens) ||
			(lim.MaxCostUSD > 0 && u.CostUSD >= lim.MaxCostUSD) {
			return true
		}
	}
	return false
}

// ErrBudgetExceeded is what Ledger.Admit refuses a call with: the call would take the
// run past its max_tokens or max_cost_usd.
var ErrBudgetExceeded = errBudget

// joinLedger gives the run its ledger, with its own budgets, nested in the ledger of the
// run it is nested in (if any); the run's context (runctx.go) then carries it, so what
// the run nests is charged to it.
func (r *run) joinLedger(ctx context.Context) {
	r.ownLedger = Ledger{limits: r.limits, pricing: r.cfg.Pricing, parent: LedgerFrom(ctx)}
	r.ledger = &r.ownLedger
	r.rc.ledger = r.ledger
}

// parentRun is the run this one is nested in (run_started's parent): the run whose
// context it started from, when that context carries a run's ledger, which this run's
// then charges too. A top-level run has none: the zero RunRef.
func (r *run) parentRun() RunRef {
	if r.ownLedger.parent == nil {
		return RunRef{}
	}
	info, _ := CallInfoFrom(r.rc.Context)
	return RunRef{Session: info.SessionID, Run: info.RunID}
}

// charge records a model call of this run: on its own usage and on the ledger.
func (r *run) charge(u Usage) {
	r.usage = r.usage.Add(u)
	r.ledger.Charge(u)
}

// spent is the usage the run reports: its own calls, what it nested and what plugins
// spent for it.
func (r *run) spent() Usage { return r.ledger.Usage() }
