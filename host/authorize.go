package host

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/loop"
)

// The door's decisions for what a surface does before, beside or instead of running:
// the server asks them for every route on a stored object (a session's transcript,
// events, feedback, shares, approvals; an A2A task; a workflow run's record, listing,
// resume and approval) and for a run it hands on to a cluster worker, and maps the
// refusals (access.ErrNotVisible: 404, the same for an unknown and a foreign object;
// access.ErrNotAllowed: 403). It holds no copy of the rule.

// DerivedPrefix starts the session ids the host derives for workflow runs (their lease
// and step sessions, workflow.RunSession): no surface starts a run in one by naming
// it, so no one can pre-create the session another user's workflow step will run in.
// Workflow steps claim theirs through Host.ClaimDerived.
const DerivedPrefix = "workflow:"

// Authorize decides whether p may take action a on the session (its owner and shares,
// access.Authorize): nil, access.ErrNotVisible (p may not even read it, or it does not
// exist: the same answer), access.ErrNotAllowed (p reads it but may not do a), or the
// store's error. A host whose store keeps no users allows everything.
func (d *Door) Authorize(ctx context.Context, p access.Principal, a access.Action, session string) error {
	return d.authorize(ctx, p, a, session)
}

// AuthorizeOwned is Authorize for an object that names its owner and has no shares: a
// workflow run, whose record keeps the id of the user who started it ("" for the
// store's operator). The rule is the sessions' (access.Allowed): admin and operator
// reach every run, a user her own.
func (d *Door) AuthorizeOwned(ctx context.Context, p access.Principal, a access.Action, owner string) error {
	if _, ok := d.h.Access(); !ok {
		return nil
	}
	switch {
	case access.Allowed(p, a, owner, nil):
		return nil
	case !access.Allowed(p, access.Read, owner, nil):
		return access.ErrNotVisible
	}
	return access.ErrNotAllowed
}

// Admit is the door's admission of a run a surface names the session of (POST
// /v1/runs, A2A), before it reads the session to answer the request and before it
// hands the run to a cluster worker: the rule Run applies (admit: who may start runs,
// whom the run is for, the claim of a new session, Write on an existing one), and no
// run in a session under DerivedPrefix unless an admin or operator starts a new one.
// in.User becomes the run's identity (an id). Run admits again, with the same rule.
func (d *Door) Admit(ctx context.Context, p access.Principal, in *loop.RunInput) error {
	if !access.MayStart(p) {
		return d.admit(ctx, p, in) // its refusal, worded once
	}
	if strings.HasPrefix(in.SessionID, DerivedPrefix) {
		runs, err := d.h.Store.Runs(ctx, in.SessionID)
		if err != nil {
			return fmt.Errorf("session runs: %w", err)
		}
		if len(runs) > 0 || !p.Privileged() {
			return fmt.Errorf("%w: session ids starting %q are workflows' own: a run cannot be started in one", access.ErrNotAllowed, DerivedPrefix)
		}
	}
	return d.admit(ctx, p, in)
}

// runUser makes in.User the identity the run is for: the caller's (its id, or the
// label of a caller without one) unless an admin or operator names another user, by id
// or by the name of a present user (which becomes their id); anyone else naming
// another user is refused.
func (d *Door) runUser(ctx context.Context, p access.Principal, in *loop.RunInput) error {
	switch {
	case in.User == "" || in.User == p.Name || in.User == p.ID:
		in.User = identity(p)
		return nil
	case !p.Privileged():
		return fmt.Errorf("%w: %s may not run as user %q", access.ErrNotAllowed, p.Name, in.User)
	}
	if as, ok := d.h.Access(); ok && !access.IsID(in.User) {
		u, found, err := access.Lookup(ctx, as, in.User)
		if err != nil {
			return fmt.Errorf("user: %w", err)
		}
		if found {
			in.User = u.ID
		}
	}
	return nil
}

// Abort stops the session's run of that id for p, and records who asked: every surface
// that aborts a run (POST .../abort, A2A tasks/cancel) comes here, so none reaches
// another user's run or stops one unrecorded. stop is how the surface reaches the run (a
// cluster's dispatcher, the local runner); it is called only once p may write the
// session, and reports whether a run of that id was in progress. Every request the door
// allowed is recorded (audit.ActionRunAbort, the caller as actor, "stopped" saying
// whether a run was in progress: an A2A task cancelled while it waits for an approval
// has none), a refused one is not; a record that cannot be written is the answer's
// error, after the stop.
func (d *Door) Abort(ctx context.Context, p access.Principal, session, runID string, stop func(context.Context) (bool, error)) (bool, error) {
	if err := d.authorize(ctx, p, access.Write, session); err != nil {
		return false, err
	}
	ok, err := stop(ctx)
	if err != nil {
		return false, err
	}
	detail := map[string]string{"stopped": strconv.FormatBool(ok)}
	if p.Role != "" {
		detail["actor_role"] = string(p.Role)
	}
	return ok, d.h.Audit(ctx, audit.Record{Action: audit.ActionRunAbort, Actor: actorOf(identity(p)), Target: session + "/" + runID, Detail: detail})
}
