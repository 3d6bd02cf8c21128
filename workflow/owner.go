package workflow

import (
	"context"
	"fmt"
)

// Derived identifiers. A run belongs to its owner (RunInput.Owner: the id of the user
// who started it; "" for the operator of the store, e.g. the CLI), and everything
// derived from its run id is scoped by the workflow's name and the owner, so two users
// (or two workflows) using the same run id never meet:
//
//   - the record's key: "NAME/RUNID", or "NAME/OWNER/RUNID" for an owned run;
//   - the run's own session, whose lease keeps a second process out while it lives:
//     RunSession, "workflow:NAME:RUNID" or "workflow:NAME:OWNER:RUNID";
//   - the session of each tool or prompt step: StepSession, the run's session and
//     "~STEP" (and "~INDEX" for an item of a for_each step).
//
// Run ids are 1–128 of A–Z a–z 0–9 . _ - (CheckRunID), so no ":", "/" or "~" in one can
// make one run's key or session look like another's; the session ids stay usable in a
// URL path (GET /v1/sessions/{id}). The Executor claims each step session for the
// owner before the step (host: access.Claim): a session someone else made first under
// that name is refused, never joined.

// CheckRunID checks a run id given by a caller.
func CheckRunID(id string) error {
	if id == "" || len(id) > 128 {
		return fmt.Errorf("%w: run id of %d bytes: want 1–128", ErrInputs, len(id))
	}
	for _, c := range []byte(id) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return fmt.Errorf("%w: run id %q: only A-Z a-z 0-9 . _ - are allowed", ErrInputs, id)
		}
	}
	return nil
}

// RunSession is the session a run holds (its lease) while it runs.
func RunSession(workflow, owner, runID string) string {
	if owner == "" {
		return "workflow:" + workflow + ":" + runID
	}
	return "workflow:" + workflow + ":" + owner + ":" + runID
}

// StepSession is the session a step (or one item of it, item >= 0) runs in.
func StepSession(workflow, owner, runID, step string, item int) string {
	s := RunSession(workflow, owner, runID) + "~" + step
	if item >= 0 {
		s += fmt.Sprintf("~%d", item)
	}
	return s
}

type ownerKey struct{}

// Owner is the owner of the run whose step ctx belongs to: the Executor claims the
// step's session for them and runs the step as them.
func Owner(ctx context.Context) string {
	o, _ := ctx.Value(ownerKey{}).(string)
	return o
}

func withOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}
