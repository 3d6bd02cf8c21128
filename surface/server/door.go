package server

import (
	"context"
	"fmt"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/loop"
)

// Door is the host's one decision of who may do what (host.(*Host).Door is one): the
// server asks it on every route that reaches a stored object and before every run it
// starts or hands to a cluster worker, and maps its refusals (access.ErrNotVisible:
// 404, access.ErrNotAllowed: 403). The server holds no copy of the rule.
type Door interface {
	// Admit admits a run for p in in.SessionID and makes in.User the run's identity.
	Admit(ctx context.Context, p access.Principal, in *loop.RunInput) error
	// Authorize decides action a on a session.
	Authorize(ctx context.Context, p access.Principal, a access.Action, session string) error
	// AuthorizeOwned decides action a on an object that names its owner (a workflow
	// run's record).
	AuthorizeOwned(ctx context.Context, p access.Principal, a access.Action, owner string) error
	// Abort decides Write on the session, calls stop, and records who stopped the run
	// when stop reports one was in progress.
	Abort(ctx context.Context, p access.Principal, session, runID string, stop func(context.Context) (bool, error)) (bool, error)
}

// door is Options.Door, or for a server with no users (no Access: tests, an embedded
// in-process agent) one that keeps no owners: everyone may act on everything, and
// only who may start runs at all is asked (access.MayStart).
func (s *Server) door() Door {
	if s.opts.Door != nil {
		return s.opts.Door
	}
	return openDoor{}
}

type openDoor struct{}

func (openDoor) Admit(_ context.Context, p access.Principal, in *loop.RunInput) error {
	if !access.MayStart(p) {
		return fmt.Errorf("%w: %s has the %s role and may not start runs", access.ErrNotAllowed, p.Name, p.Role)
	}
	if in.User == "" {
		in.User = p.ID
	}
	return nil
}

func (openDoor) Authorize(context.Context, access.Principal, access.Action, string) error { return nil }

func (openDoor) AuthorizeOwned(context.Context, access.Principal, access.Action, string) error {
	return nil
}

func (openDoor) Abort(ctx context.Context, _ access.Principal, _, _ string, stop func(context.Context) (bool, error)) (bool, error) {
	return stop(ctx)
}
