package host

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/loop"
)

// forkKV is the store's key/value namespace of the sessions' lineage: one record per
// fork, keyed by its session id (sealed as every value is when the store is keyed).
const forkKV = "agenthost/forks"

// ErrNoSession is a fork's or a comparison's answer for a session that has no entry,
// wrapped in access.ErrNotVisible: the same answer a caller gets for a session they may
// not read.
var ErrNoSession = fmt.Errorf("%w: no such session", access.ErrNotVisible)

// Fork makes a new session for p whose history is the session's up to an entry, with
// the edits applied (loop.ForkHistory: typed, validated, refused with the reason as
// loop.ErrInvalidEdit); the original is not changed. p must be allowed to read the
// original and to start runs (a viewer forks nothing); the fork is p's (claimed for p's
// identity before anything is stored), written by the store like any session (sealed
// when the store is keyed), its lineage kept (loop.Lineage) and the fork audited
// (audit.ActionSessionFork, naming the parent, the point and the edits).
func (d *Door) Fork(ctx context.Context, p access.Principal, req loop.ForkRequest) (string, loop.Lineage, error) {
	h := d.h
	if err := d.authorize(ctx, p, access.Read, req.Session); err != nil {
		return "", loop.Lineage{}, err
	}
	if !access.MayStart(p) {
		return "", loop.Lineage{}, fmt.Errorf("%w: %s has the %s role and may not fork sessions", access.ErrNotAllowed, p.Name, p.Role)
	}
	entries, err := h.Store.Load(ctx, req.Session)
	if err != nil {
		return "", loop.Lineage{}, fmt.Errorf("load session %q: %w", req.Session, err)
	}
	if len(entries) == 0 {
		return "", loop.Lineage{}, ErrNoSession
	}
	history, err := loop.ForkHistory(entries, req.At, req.Edits)
	if err != nil {
		return "", loop.Lineage{}, err
	}
	id := "ses_" + shortID()
	who := identity(p)
	if as, ok := h.Access(); ok && who != "" {
		if _, err := as.ClaimOwner(ctx, id, who); err != nil {
			return "", loop.Lineage{}, fmt.Errorf("claim session: %w", err)
		}
	}
	if err := h.Store.Append(ctx, id, history...); err != nil {
		return "", loop.Lineage{}, fmt.Errorf("store fork: %w", err)
	}
	// The lineage names the edits, not their text: that is in the fork's history, erased
	// with it.
	named := make([]loop.Edit, len(req.Edits))
	for i, e := range req.Edits {
		named[i] = loop.Edit{Op: e.Op, CallID: e.CallID}
	}
	lin := loop.Lineage{Parent: req.Session, At: req.At, Base: int64(len(history)), Edits: named, By: who, Created: time.Now().UTC()}
	b, err := json.Marshal(lin)
	if err == nil {
		err = h.Store.KVSet(context.WithoutCancel(ctx), forkKV, id, b)
	}
	if err != nil {
		return id, lin, fmt.Errorf("store the lineage of fork %s: %w", id, err)
	}
	ops := make([]string, len(req.Edits))
	for i, e := range req.Edits {
		ops[i] = string(e.Op)
		if e.CallID != "" {
			ops[i] += " " + e.CallID
		}
	}
	detail := map[string]string{"parent": req.Session, "at": strconv.FormatInt(req.At, 10), "edits": strings.Join(ops, "; ")}
	if p.ID != "" {
		detail["actor_id"] = p.ID
	}
	return id, lin, h.Audit(ctx, audit.Record{Action: audit.ActionSessionFork, Actor: actorOf(who), Target: id, Detail: detail})
}

// Lineage is the record of the fork a session is, if it is one.
func (h *Host) Lineage(ctx context.Context, session string) (loop.Lineage, bool, error) {
	b, ok, err := h.Store.KVGet(ctx, forkKV, session)
	if err != nil || !ok || len(b) == 0 {
		return loop.Lineage{}, false, err
	}
	var lin loop.Lineage
	if err := json.Unmarshal(b, &lin); err != nil {
		return loop.Lineage{}, false, fmt.Errorf("lineage of %s: %w", session, err)
	}
	return lin, true, nil
}

// forgetLineage removes a deleted session's lineage record (its forks keep theirs: a
// parent that is gone is shown as such).
func (h *Host) forgetLineage(ctx context.Context, session string) {
	if _, ok, err := h.Lineage(ctx, session); err == nil && ok {
		_ = h.Store.KVSet(ctx, forkKV, session, nil)
	}
}

// Compare shows sessions a and b side by side from the point they part, for p, who must
// be allowed to read both.
func (d *Door) Compare(ctx context.Context, p access.Principal, a, b string) (loop.Comparison, error) {
	h := d.h
	var es [2][]loop.Entry
	var lin [2]loop.Lineage
	var forked [2]bool
	for i, id := range []string{a, b} {
		if err := d.authorize(ctx, p, access.Read, id); err != nil {
			return loop.Comparison{}, err
		}
		var err error
		if es[i], err = h.Store.Load(ctx, id); err != nil {
			return loop.Comparison{}, fmt.Errorf("load session %q: %w", id, err)
		}
		if len(es[i]) == 0 {
			return loop.Comparison{}, ErrNoSession
		}
		if lin[i], forked[i], err = h.Lineage(ctx, id); err != nil {
			return loop.Comparison{}, err
		}
	}
	var from [2]int64
	switch {
	case forked[1] && lin[1].Parent == a:
		from = [2]int64{lin[1].At, lin[1].Base}
	case forked[0] && lin[0].Parent == b:
		from = [2]int64{lin[0].Base, lin[0].At}
	case forked[0] && forked[1] && lin[0].Parent == lin[1].Parent:
		from = [2]int64{lin[0].Base, lin[1].Base}
	default:
		return loop.Comparison{}, loop.ErrUnrelated
	}
	return loop.Comparison{A: loop.SideFrom(a, es[0], from[0]), B: loop.SideFrom(b, es[1], from[1])}, nil
}

// Lineage is Host.Lineage for a surface, once the door has allowed it to read the
// session (GET /v1/sessions/{id} shows it).
func (d *Door) Lineage(ctx context.Context, session string) (loop.Lineage, bool, error) {
	return d.h.Lineage(ctx, session)
}
