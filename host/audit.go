package host

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/loop"
)

// The audit log (package audit) is written here and nowhere else: every surface that
// starts a run or calls a tool goes through the door (door.go), which records it here, every approval through the approver agentFrom
// wraps, every session deletion through Host.DeleteSession; memory deletions are recorded
// by the surfaces that make them, through Host.Audit (the server gets it as an option).
// A store without an audit log (the in-process store) records nothing.

// Audit appends a record when the store keeps an audit log. Time is set here.
func (h *Host) Audit(ctx context.Context, r audit.Record) error {
	s, ok := h.Store.(audit.Store)
	if !ok {
		return nil
	}
	r.Time = time.Now()
	withTrace(ctx, &r)
	_, err := s.AppendAudit(context.WithoutCancel(ctx), r)
	return err
}

// actorOf names who a run is for in the log.
func actorOf(user string) string {
	if user == "" {
		return "anonymous"
	}
	return user
}

// auditRun records the start of a door entry for p before it starts (one whose record
// cannot be written does not run: the log never misses a run that happened) and returns
// the function that records its end, best effort (the run has happened; the chain stays
// whole without it). The actor is the run's user; the detail names the principal's id
// and role beside what the entry says about itself (agent, tool).
func (h *Host) auditRun(ctx context.Context, p access.Principal, in *loop.RunInput, detail map[string]string) (func(loop.RunResult), error) {
	if _, ok := h.Store.(audit.Store); !ok {
		return func(loop.RunResult) {}, nil
	}
	who := map[string]string{}
	if p.ID != "" {
		who["actor_id"] = p.ID
	}
	if p.Role != "" {
		who["actor_role"] = string(p.Role)
	}
	start := maps.Clone(who)
	maps.Copy(start, detail)
	if media := inputMedia(in.Messages); media != "" {
		start["attachments"] = media
	}
	target := in.SessionID + "/" + in.RunID
	if err := h.Audit(ctx, audit.Record{Action: audit.ActionRunStart, Actor: actorOf(in.User), Target: target, Detail: start}); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	// Answers given with the run (a resume over HTTP) are recorded by the loop's
	// approval decision (approvals.go, Record), with whether they fit the call.
	user := in.User
	return func(res loop.RunResult) {
		d := map[string]string{"status": string(res.Status), "reason": string(res.Reason),
			"tokens": strconv.Itoa(res.Usage.TotalTokens), "cost_usd": strconv.FormatFloat(res.Usage.CostUSD, 'f', -1, 64)}
		maps.Copy(d, who)
		_ = h.Audit(ctx, audit.Record{Action: audit.ActionRunEnd, Actor: actorOf(user), Target: target, Detail: d})
	}, nil
}

// auditedApprover passes approvals on (the loop records each decision through the
// host's approval policy, approvals.go) and records the answers to input requests.
type auditedApprover struct {
	h     *Host
	inner loop.Approver
}

func (a auditedApprover) Approve(ctx context.Context, c loop.ToolCall) (loop.Approval, error) {
	return a.inner.Approve(ctx, c)
}

// AskInput asks the inner Approver for a call's input when it can ask while the call
// waits (loop.InputAsker), recording the answer as an approval (kind input; the fields
// themselves are not recorded); otherwise the call interrupts the run.
func (a auditedApprover) AskInput(ctx context.Context, c loop.ToolCall, req loop.InputRequest) (loop.Approval, error) {
	asker, ok := a.inner.(loop.InputAsker)
	if !ok {
		return loop.Approval{}, loop.ErrApprovalPending
	}
	ap, err := asker.AskInput(ctx, c, req)
	if err != nil {
		return ap, err
	}
	info, _ := loop.CallInfoFrom(ctx)
	_ = a.h.Audit(ctx, audit.Record{Action: audit.ActionApproval, Actor: actorOf(info.User), Target: info.SessionID + "/" + info.RunID,
		Detail: map[string]string{"tool": c.Name, "call": c.ID, "kind": "input", "approved": strconv.FormatBool(ap.Approved), "reason": ap.Reason}})
	return ap, nil
}

func (h *Host) auditedApprover(a loop.Approver) loop.Approver {
	if a == nil {
		return nil
	}
	if _, ok := h.Store.(audit.Store); !ok {
		return a
	}
	return auditedApprover{h: h, inner: a}
}

// DeleteSession deletes a stored session (not one whose run is in progress), recording
// who asked, and what the host keeps of it in memory: its plugins' instances (isolation
// "session"), the retired plugins' of an earlier Reload included (erase.go).
func (h *Host) DeleteSession(ctx context.Context, id, actor string) error {
	d, ok := h.Store.(loop.SessionDeleter)
	if !ok {
		return fmt.Errorf("the %s store cannot delete sessions", h.Manifest.Store.Kind)
	}
	if err := d.DeleteSession(ctx, id); err != nil {
		return err
	}
	h.forgetSession(ctx, id)
	h.forgetLineage(ctx, id)
	return h.Audit(ctx, audit.Record{Action: audit.ActionSessionDelete, Actor: actor, Target: id})
}
