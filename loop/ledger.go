package loop

import (
	"context"
	"sync"
)

// Ledger is the spend of one top-level run: its own model calls, those of the runs it
// nests (ask_NAME, plan steps done as sub-runs), those plugins make on its behalf
// (create_message) and the embeddings the host makes for it (memory recall and the
// remember tool, host/embed.go). Every one of them is checked against the top-level run's token and
// cost budgets before it is made (L18) and charged after, so no surface spends outside
// the budget the caller set. A nested run shares its caller's ledger and still checks
// its own agent's budgets on its own spend.
//
// The run puts its ledger on the context of everything it calls (LedgerFrom), so a host
// serving a plugin's model call finds the ledger to charge without a wider interface.
type Ledger struct {
	mu      sync.Mutex
	limits  Limits
	pricing Pricing
	usage   Usage
	calls   int // calls charged (model calls and embeddings)
}

type ledgerKey struct{}

// LedgerFrom returns the ledger of the run ctx belongs to (the top-level run's), or nil
// outside a run.
func LedgerFrom(ctx context.Context) *Ledger {
	l, _ := ctx.Value(ledgerKey{}).(*Ledger)
	return l
}

// Admit reports errBudget (ErrBudgetExceeded) when a model call whose prompt is
// estimated at promptTokens would take the run past its token or cost budget (L18).
func (l *Ledger) Admit(promptTokens int) error {
	return l.AdmitAt(promptTokens, l.pricing)
}

// AdmitAt is Admit for a call priced otherwise than the run's model (an embedding, at
// its provider's prices).
func (l *Ledger) AdmitAt(promptTokens int, p Pricing) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.admitLocked(promptTokens, p)
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

// Charge adds a model call's usage, priced with the top-level run's Pricing when the
// provider reported no cost, and returns it as charged.
func (l *Ledger) Charge(u Usage) Usage {
	return l.ChargeAt(u, l.pricing)
}

// ChargeAt is Charge for a call priced otherwise than the run's model: with p when the
// provider reported no cost. It adds to the same spend Charge does: there is one.
func (l *Ledger) ChargeAt(u Usage, p Pricing) Usage {
	u = priced(u, p)
	l.mu.Lock()
	l.usage = l.usage.Add(u)
	l.calls++
	l.mu.Unlock()
	return u
}

// Usage is what the run and everything it nests spent so far.
func (l *Ledger) Usage() Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.usage
}

// limited reports whether the ledger has a budget at all.
func (l *Ledger) limited() bool { return l.limits.MaxTokens > 0 || l.limits.MaxCostUSD > 0 }

// exhausted reports whether the spend reached a budget (L9).
func (l *Ledger) exhausted() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.limits
	return (lim.MaxTokens > 0 && l.usage.TotalTokens >= lim.MaxTokens) ||
		(lim.MaxCostUSD > 0 && l.usage.CostUSD >= lim.MaxCostUSD)
}

// ErrBudgetExceeded is what Ledger.Admit refuses a call with: the call would take the
// run past its max_tokens or max_cost_usd.
var ErrBudgetExceeded = errBudget

// joinLedger gives the run its ledger: the one of the run it is nested in, or a new one
// with its own budgets, which the run's context (runctx.go) then carries.
func (r *run) joinLedger(ctx context.Context) {
	if l := LedgerFrom(ctx); l != nil {
		r.ledger, r.nested = l, true
		return
	}
	r.ownLedger = Ledger{limits: r.limits, pricing: r.cfg.Pricing}
	r.ledger = &r.ownLedger
	r.rc.ledger = r.ledger // the run's context carries it (runctx.go)
}

// charge records a model call of this run: on its own usage and on the ledger.
func (r *run) charge(u Usage) {
	r.usage = r.usage.Add(u)
	r.ledger.Charge(u)
}

// spent is the usage the run reports: a top-level run's includes what it nested and
// what plugins spent for it; a nested run's is its own.
func (r *run) spent() Usage {
	if r.nested {
		return r.usage
	}
	return r.ledger.Usage()
}
