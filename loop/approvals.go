package loop

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Approvals (rule L6) are decided here and nowhere else: every call any surface makes
// goes through admit (pipeline.go), which asks permission for a verdict and approve for
// a human's answer. The order: the permission hook (deny and ask are final), the
// ApprovalPolicy's rules (first match wins), RequireApproval, ApprovalDefault. A call
// that asks is allowed by a live grant, or by an answer bound to it, or by the
// Approver; every decision is handed to ApprovalPolicy.Record.
//
// An answer is bound to the call: an answer given with a run (RunInput.Approvals)
// counts only for a call the session's previous run asked about (its approval_required
// event), with the same hash of canonical arguments, before the request expired, and
// once. Anything else is asked again; a pre-supplied rejection is kept (deny is never
// a risk). An expired request is denied, never allowed.

// DefaultApprovalTTL is how long an approval request waits when ToolPolicy.ApprovalTTL
// is unset.
const DefaultApprovalTTL = 24 * time.Hour

// The scopes of an approver's yes (Approval.Scope).
const (
	ScopeOnce    = "once"    // this call only (the default)
	ScopeSession = "session" // the tool (or the rule that asked) for the rest of the session
	ScopeUser    = "user"    // the tool (or rule) for the approving user, Approval.For long
)

// ApprovalCall is what the approval policy sees of a call.
type ApprovalCall struct {
	Call     ToolCall
	ArgsHash string // ArgsHash(Call.Arguments)
	Agent    string
	User     string
	Session  string
	Run      string
	Usage    Usage // the run's own spend so far
	Calls    int   // tool results the run has stored so far
}

// Grant is a standing yes: an approver's answer with a scope wider than one call.
type Grant struct {
	ID      string    `json:"id"`
	Scope   string    `json:"scope"` // ScopeSession or ScopeUser
	Session string    `json:"session,omitempty"`
	User    string    `json:"user,omitempty"`
	Tool    string    `json:"tool,omitempty"` // the tool it allows, or
	Rule    string    `json:"rule,omitempty"` // the rule whose asks it answers
	By      string    `json:"by"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
}

// Covers reports whether g allows c (asked by rule, "" when not by a rule) at now.
func (g Grant) Covers(c ApprovalCall, rule string, now time.Time) bool {
	if !now.Before(g.Expires) {
		return false
	}
	switch {
	case g.Scope == ScopeSession && (g.Session == "" || g.Session != c.Session):
		return false
	case g.Scope == ScopeUser && (g.User == "" || g.User != c.User):
		return false
	case g.Scope != ScopeSession && g.Scope != ScopeUser:
		return false
	}
	if g.Rule != "" {
		return g.Rule == rule
	}
	return g.Tool != "" && g.Tool == c.Call.Name
}

// ErrNoGrant is the error for a grant id no grant has (or one the caller may not see).
var ErrNoGrant = errors.New("no such grant")

// ApprovalDecision is one decision, for the record (the audit log).
type ApprovalDecision struct {
	Call    ApprovalCall
	Verdict PermissionVerdict // allow, deny, or ask (a human is asked)
	// By is what decided: "rule", "default" (approval_default or require_approval),
	// "permission" (the hook), "grant", "approver", "resume" (an answer given with the
	// run), "expired", "unbound" (an answer that does not fit the call: asked again).
	By        string
	Rule      string
	Grant     string
	Who       string // the approver, for a human's answer
	Scope     string
	Reason    string
	ExpiresAt time.Time // the request's, or the grant's
}

// ApprovalPolicy is the host's side of the decision: the rules, the grants and the
// record. A nil one has no rules, no grants and records nothing.
type ApprovalPolicy interface {
	// Rule is the verdict of the first rule that matches the call ("" when none does);
	// an error (a rule that cannot be evaluated) denies the call.
	Rule(ctx context.Context, c ApprovalCall) (v PermissionVerdict, rule, reason string, err error)
	// Grant returns the id of a live grant that allows c, asked by rule ("" if none).
	Grant(ctx context.Context, c ApprovalCall, rule string) (string, error)
	// Keep stores a grant and returns its id.
	Keep(ctx context.Context, g Grant) (string, error)
	// Record records a decision, best effort.
	Record(ctx context.Context, d ApprovalDecision)
}

// ArgsHash is the hash an approval is bound to: SHA-256 of the canonical JSON of the
// arguments ("" counts as {}), or of the text as it is when it is not JSON.
func ArgsHash(args string) string {
	if args == "" {
		args = "{}"
	}
	if c, ok := canonicalJSON(args); ok {
		args = c
	}
	sum := sha256.Sum256([]byte(args))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// approvalCall is what the policy sees of c; its ArgsHash is left to hashed (a rule
// does not need it, and most calls never get further).
func (r *run) approvalCall(c ToolCall) ApprovalCall {
	return ApprovalCall{Call: c, Agent: r.cfg.Name, User: r.in.User,
		Session: r.in.SessionID, Run: r.in.RunID, Usage: r.usage, Calls: r.toolCalls}
}

func hashed(ac ApprovalCall) ApprovalCall {
	if ac.ArgsHash == "" {
		ac.ArgsHash = ArgsHash(ac.Call.Arguments)
	}
	return ac
}

func (r *run) record(d ApprovalDecision) {
	if r.cfg.Approvals != nil {
		d.Call = hashed(d.Call)
		r.cfg.Approvals.Record(r.ctx, d)
	}
}

// approvalTTL is how long a request of this run waits.
func (r *run) approvalTTL() time.Duration {
	if r.policy.ApprovalTTL > 0 {
		return r.policy.ApprovalTTL
	}
	return DefaultApprovalTTL
}

// approve decides a call that asks (L6): an answer bound to it, else a live grant,
// else the Approver, moving the run to awaiting_human while it waits.
func (r *run) approve(c ToolCall, rule string) (bool, string, error) {
	ac := hashed(r.approvalCall(c))
	if ok, why, done := r.boundAnswer(ac, rule); done {
		return ok, why, nil
	}
	if r.cfg.Approvals != nil {
		id, err := r.cfg.Approvals.Grant(r.ctx, ac, rule)
		if err != nil { // ambiguity is deny
			r.record(ApprovalDecision{Call: ac, Verdict: PermitDeny, By: "grant", Rule: rule, Reason: err.Error()})
			return false, fmt.Sprintf("the grants could not be read: %v", err), nil
		}
		if id != "" {
			r.record(ApprovalDecision{Call: ac, Verdict: PermitAllow, By: "grant", Rule: rule, Grant: id})
			return true, "", nil
		}
	}
	return r.askApprover(ac, rule)
}

// askApprover asks the run's Approver about ac, storing the request (bound to the
// call's arguments, with its expiry) before the wait (L21).
func (r *run) askApprover(ac ApprovalCall, rule string) (bool, string, error) {
	c := ac.Call
	ap := r.approver()
	if ap == nil {
		r.record(ApprovalDecision{Call: ac, Verdict: PermitDeny, By: "approver", Rule: rule, Reason: "no approver"})
		return false, "approval required and no approver is configured", nil
	}
	// Everything before the request is stored before the request is shown (a client
	// that answers it, or a process killed while it waits, finds the earlier results
	// stored), and the request is stored before the wait (L21).
	if err := r.journal.flush(); err != nil {
		return false, "", err
	}
	expires := r.cfg.Driver.Now().Add(r.approvalTTL())
	r.record(ApprovalDecision{Call: ac, Verdict: PermitAsk, By: "approver", Rule: rule, ExpiresAt: expires})
	r.journal.emit(EventApproval, r.journal.pl.toolCall.put(ToolCallData{ID: c.ID, Name: c.Name, Arguments: eventArgs(c.Arguments),
		ArgsHash: ac.ArgsHash, ExpiresAt: expires.UTC().Format(time.RFC3339Nano), Rule: rule}))
	r.on(onAskHuman)
	if err := r.journal.flush(); err != nil {
		return false, "", err
	}
	actx, cancel := context.WithDeadline(r.ctx, expires)
	defer cancel()
	a, err := ap.Approve(actx, c)
	if errors.Is(err, ErrApprovalPending) {
		return false, "", err // the run ends here, still awaiting_human
	}
	r.on(onAnswered)
	if err != nil {
		if cerr := r.ctxErr(); cerr != nil {
			return false, "", cerr
		}
		if actx.Err() != nil { // the request expired: deny, never allow
			r.record(ApprovalDecision{Call: ac, Verdict: PermitDeny, By: "expired", Rule: rule, ExpiresAt: expires})
			return false, "the approval request expired", nil
		}
		r.record(ApprovalDecision{Call: ac, Verdict: PermitDeny, By: "approver", Rule: rule, Reason: err.Error()})
		return false, fmt.Sprintf("approval failed: %v", err), nil
	}
	return r.takeAnswer(ac, rule, a, "approver")
}

// takeAnswer applies a human's answer: a yes with a scope wider than once stores its
// grant first (an answer whose scope is unclear is a no).
func (r *run) takeAnswer(ac ApprovalCall, rule string, a Approval, by string) (bool, string, error) {
	who := cmpOr(a.By, ac.User)
	d := ApprovalDecision{Call: ac, By: by, Rule: rule, Who: who, Scope: cmpOr(a.Scope, ScopeOnce), Reason: a.Reason}
	if !a.Approved {
		d.Verdict = PermitDeny
		r.record(d)
		return false, cmpOr(a.Reason, "rejected by the user"), nil
	}
	g, err := r.grantOf(ac, rule, a, who)
	if err != nil {
		d.Verdict, d.Reason = PermitDeny, err.Error()
		r.record(d)
		return false, err.Error(), nil
	}
	if g != nil {
		if g.ID, err = r.cfg.Approvals.Keep(r.ctx, *g); err != nil {
			d.Verdict, d.Reason = PermitDeny, "the grant could not be stored: "+err.Error()
			r.record(d)
			return false, d.Reason, nil
		}
		d.Grant, d.ExpiresAt = g.ID, g.Expires
	}
	d.Verdict = PermitAllow
	r.record(d)
	return true, "", nil
}

// grantOf is the grant a yes asks for (nil for once), or why it is refused.
func (r *run) grantOf(ac ApprovalCall, rule string, a Approval, who string) (*Grant, error) {
	switch a.Scope {
	case "", ScopeOnce:
		return nil, nil
	case ScopeSession, ScopeUser:
	default:
		return nil, fmt.Errorf("approval scope %q is not once, session or user", a.Scope)
	}
	if r.cfg.Approvals == nil {
		return nil, fmt.Errorf("approval scope %q needs a store for grants", a.Scope)
	}
	if a.ForRule && rule == "" {
		return nil, errors.New("the approval names the rule, but no rule asked for this call")
	}
	now := r.cfg.Driver.Now()
	g := &Grant{Scope: a.Scope, By: who, Created: now, Expires: now.Add(a.For)}
	if a.ForRule {
		g.Rule = rule
	} else {
		g.Tool = ac.Call.Name
	}
	if a.Scope == ScopeSession {
		g.Session = ac.Session
		if a.For <= 0 {
			g.Expires = now.Add(r.approvalTTL())
		}
		return g, nil
	}
	if ac.User == "" || a.For <= 0 {
		return nil, errors.New("a grant for a user needs a named user and a duration")
	}
	g.User = ac.User
	return g, nil
}
