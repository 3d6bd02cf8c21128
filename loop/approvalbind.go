package loop

import "time"

// approvalRequests are the approval requests the session's previous run left: what an
// answer given with this run (RunInput.Approvals) may answer.
type approvalRequests struct {
	loaded bool
	byCall map[string]ToolCallData // the last request per call id
	used   map[string]bool         // answers this run has used: each counts once
}

// boundAnswer applies the answer given with the run for ac, when there is one that is
// bound to it (see approvals.go); done is false when the call must be decided
// otherwise (a grant, the Approver).
func (r *run) boundAnswer(ac ApprovalCall, rule string) (ok bool, why string, done bool) {
	a, given := r.in.Approvals[ac.Call.ID]
	if !given {
		return false, "", false
	}
	if !a.Approved && !r.answers.used[ac.Call.ID] { // a no is kept, bound or not
		r.markUsed(ac.Call.ID)
		ok, why, _ := r.takeAnswer(ac, rule, a, "resume")
		return ok, why, true
	}
	req, found := r.pendingRequest(ac.Call.ID)
	unbound := func(reason string) (bool, string, bool) {
		r.record(ApprovalDecision{Call: ac, Verdict: PermitAsk, By: "unbound", Rule: rule, Reason: reason})
		return false, "", false
	}
	switch {
	case r.answers.used[ac.Call.ID]:
		return unbound("the answer was used already")
	case !found:
		return unbound("no approval request of the previous run is for this call")
	case req.ArgsHash != ac.ArgsHash:
		return unbound("the call's arguments changed since the request")
	case a.ArgsHash != "" && a.ArgsHash != ac.ArgsHash:
		return unbound("the answer names other arguments")
	}
	r.markUsed(ac.Call.ID)
	if exp, err := time.Parse(time.RFC3339Nano, req.ExpiresAt); err != nil || !r.cfg.Driver.Now().Before(exp) {
		r.record(ApprovalDecision{Call: ac, Verdict: PermitDeny, By: "expired", Rule: rule, ExpiresAt: exp})
		return false, "the approval request expired", true
	}
	ok, why, _ = r.takeAnswer(ac, rule, a, "resume")
	return ok, why, true
}

func (r *run) markUsed(id string) {
	if r.answers.used == nil {
		r.answers.used = map[string]bool{}
	}
	r.answers.used[id] = true
}

// pendingRequest is the previous run's approval request for the call id: read from the
// session's events once per run, and only by a run given answers.
func (r *run) pendingRequest(id string) (ToolCallData, bool) {
	if !r.answers.loaded {
		r.answers.loaded = true
		r.answers.byCall = r.loadRequests()
	}
	d, ok := r.answers.byCall[id]
	return d, ok
}

// loadRequests reads the approval_required events of the session's last run before
// this one. A session that cannot be read has none (its answers are asked again).
func (r *run) loadRequests() map[string]ToolCallData {
	entries, err := r.cfg.Store.Load(r.ctx, r.in.SessionID)
	if err != nil {
		return nil
	}
	out := map[string]ToolCallData{}
	last := ""
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i].Event
		if e == nil || e.RunID == r.in.RunID {
			continue
		}
		if last == "" {
			last = e.RunID
		}
		if e.RunID != last {
			break
		}
		if e.Type != EventApproval {
			continue
		}
		var d ToolCallData
		switch v := e.Data.(type) {
		case *ToolCallData:
			d = *v
		case ToolCallData:
			d = v
		default:
			continue
		}
		if _, seen := out[d.ID]; !seen { // walking back: the first seen is the last asked
			out[d.ID] = d
		}
	}
	return out
}
