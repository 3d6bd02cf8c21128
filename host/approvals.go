package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/approval"
	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/loop"
)

// The host's side of approvals (loop.ApprovalPolicy): the manifest's [[approvals]]
// rules, the grants an approver's answer stores (in the store's key-value table, under
// grantsKV, sealed like any value), and the audit record of every decision. The loop
// decides (loop/approvals.go); this only answers its questions.

// grantsKV is the key-value namespace of the grants; no plugin name has a slash.
const grantsKV = "agenthost/approvals"

// maxGrants bounds the grants read (past it a call asks: never a wider yes).
const maxGrants = 10_000

// ActionGrantRevoke is the audit action of a grant revoked.
const ActionGrantRevoke = "approval.grant.revoke"

type hostApprovals struct {
	h     *Host
	rules *approval.Policy
}

// approvalsOf is the approval policy of the host's agents.
func (h *Host) approvalsOf() (loop.ApprovalPolicy, error) {
	p, err := approval.Compile(h.Manifest.Approvals)
	if err != nil { // the manifest's check compiled them already
		return nil, err
	}
	return hostApprovals{h: h, rules: p}, nil
}

func (a hostApprovals) Rule(ctx context.Context, c loop.ApprovalCall) (loop.PermissionVerdict, string, string, error) {
	if a.rules.Len() == 0 {
		return "", "", "", nil
	}
	f := approval.Facts{Tool: c.Call.Name, Agent: c.Agent, User: c.User, Session: c.Session, Source: a.h.sourceOf(c.Call.Name),
		Tokens: c.Usage.TotalTokens, CostUSD: c.Usage.CostUSD, ToolCalls: c.Calls}
	if p, ok := access.PrincipalFrom(ctx); ok {
		f.Role = string(p.Role)
	}
	args := strings.TrimSpace(c.Call.Arguments)
	if args == "" {
		args = "{}"
	}
	if err := json.Unmarshal([]byte(args), &f.Args); err != nil {
		return loop.PermitDeny, "", "", fmt.Errorf("the arguments are not JSON: %w", err)
	}
	r, ok, err := a.rules.Decide(f)
	if err != nil {
		return loop.PermitDeny, r.Name, "", err
	}
	if !ok {
		return "", "", "", nil
	}
	return loop.PermissionVerdict(r.Decision), r.Name, r.Reason, nil
}

// sourceOf is the plugin or MCP server a tool comes from ("" for the host's own).
func (h *Host) sourceOf(name string) string {
	for _, t := range h.tools {
		if o, ok := t.(ownedTool); ok && o.modelName() == name {
			return o.owner()
		}
	}
	return ""
}

func (a hostApprovals) Grant(ctx context.Context, c loop.ApprovalCall, rule string) (string, error) {
	gs, err := a.h.Grants(ctx)
	if err != nil {
		return "", err
	}
	now := a.h.now()
	for _, g := range gs {
		if g.Covers(c, rule, now) {
			return g.ID, nil
		}
	}
	return "", nil
}

func (a hostApprovals) Keep(ctx context.Context, g loop.Grant) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	g.ID = "grant_" + hex.EncodeToString(b[:])
	v, err := json.Marshal(g)
	if err != nil {
		return "", err
	}
	if err := a.h.Store.KVSet(context.WithoutCancel(ctx), grantsKV, g.ID, v); err != nil {
		return "", err
	}
	return g.ID, nil
}

// Record writes the decision to the audit log: who (the approver, else the run's user,
// else "policy"), what decided (rule, grant), the call and its argument hash, the scope
// and the expiry.
func (a hostApprovals) Record(ctx context.Context, d loop.ApprovalDecision) {
	detail := map[string]string{"tool": d.Call.Call.Name, "call": d.Call.Call.ID, "args_hash": d.Call.ArgsHash,
		"decision": string(d.Verdict), "by": d.By, "approved": fmt.Sprint(d.Verdict == loop.PermitAllow)}
	for k, v := range map[string]string{"rule": d.Rule, "grant": d.Grant, "scope": d.Scope, "reason": d.Reason} {
		if v != "" {
			detail[k] = v
		}
	}
	if !d.ExpiresAt.IsZero() {
		detail["expires_at"] = d.ExpiresAt.UTC().Format(time.RFC3339)
	}
	actor := d.Who
	if actor == "" {
		actor = "policy"
	}
	if p, ok := access.PrincipalFrom(ctx); ok && p.ID != "" {
		detail["actor_id"] = p.ID
	}
	_ = a.h.Audit(ctx, audit.Record{Action: audit.ActionApproval, Actor: actor, Target: d.Call.Session + "/" + d.Call.Run, Detail: detail})
}

// Grants lists the live grants, oldest first. An expired grant is deleted here, where
// every listing and every call's check reads the grants: it allows nothing and is
// never shown, and its record stays in the audit log (the answer that made it, with its
// expiry). A grant that cannot be deleted now is still left out, and deleted on a
// later read.
func (h *Host) Grants(ctx context.Context) ([]loop.Grant, error) {
	l, ok := h.Store.(loop.KVLister)
	if !ok {
		return nil, nil
	}
	keys, err := l.KVKeys(ctx, grantsKV, "", maxGrants)
	if err != nil {
		return nil, err
	}
	out := make([]loop.Grant, 0, len(keys))
	now := h.now()
	for _, k := range keys {
		b, found, err := h.Store.KVGet(ctx, grantsKV, k)
		if err != nil {
			return nil, err
		}
		if !found || len(b) == 0 {
			continue
		}
		var g loop.Grant
		if err := json.Unmarshal(b, &g); err != nil {
			return nil, fmt.Errorf("grant %s: %w", k, err)
		}
		if !now.Before(g.Expires) {
			_ = h.deleteGrant(context.WithoutCancel(ctx), k) // best effort: left out either way
			continue
		}
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, nil
}

// ErrNoGrant is RevokeGrant's error for an id no grant has (loop.ErrNoGrant).
var ErrNoGrant = loop.ErrNoGrant

// RevokeGrant deletes a grant and records who revoked it. From then on the calls it
// allowed ask again.
func (h *Host) RevokeGrant(ctx context.Context, id, actor string) error {
	if !strings.HasPrefix(id, "grant_") {
		return ErrNoGrant
	}
	b, found, err := h.Store.KVGet(ctx, grantsKV, id)
	if err != nil {
		return err
	}
	if !found || len(b) == 0 {
		return ErrNoGrant
	}
	if err := h.deleteGrant(ctx, id); err != nil {
		return err
	}
	return h.Audit(ctx, audit.Record{Action: ActionGrantRevoke, Actor: actorOf(actor), Target: id, Detail: map[string]string{"grant": string(b)}})
}

// deleteGrant removes a grant's row (a store that cannot delete a key gets it emptied,
// which Grants skips).
func (h *Host) deleteGrant(ctx context.Context, id string) error {
	if d, ok := h.Store.(interface {
		KVDelete(ctx context.Context, plugin, key string) error
	}); ok {
		return d.KVDelete(ctx, grantsKV, id)
	}
	return h.Store.KVSet(ctx, grantsKV, id, nil)
}

// now is the clock grants are measured by: Options.Clock, else the wall clock (the
// loop stamps a grant's creation and expiry with the same clock).
func (h *Host) now() time.Time {
	if h.opts.Clock != nil {
		return h.opts.Clock()
	}
	return time.Now()
}

// mayManageGrant reports whether p may see and revoke g: an admin or operator any, a
// user the grants they gave or that are theirs.
func mayManageGrant(p access.Principal, g loop.Grant) bool {
	if p.Role == access.RoleAdmin || p.Role == access.RoleOperator {
		return true
	}
	id := identity(p)
	return id != "" && (g.By == id || g.User == id)
}

// Grants lists the grants p may see (every surface's listing: HTTP, CLI).
func (d *Door) Grants(ctx context.Context, p access.Principal) ([]loop.Grant, error) {
	gs, err := d.h.Grants(ctx)
	if err != nil {
		return nil, err
	}
	out := gs[:0]
	for _, g := range gs {
		if mayManageGrant(p, g) {
			out = append(out, g)
		}
	}
	return out, nil
}

// RevokeGrant revokes a grant p may manage; one p may not see is ErrNoGrant.
func (d *Door) RevokeGrant(ctx context.Context, p access.Principal, id string) error {
	gs, err := d.h.Grants(ctx)
	if err != nil {
		return err
	}
	for _, g := range gs {
		if g.ID == id && mayManageGrant(p, g) {
			return d.h.RevokeGrant(ctx, id, p.Name)
		}
	}
	return ErrNoGrant
}
