package host

import (
	"context"
	"errors"
	"testing"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/loop"
)

// The door's decisions beside a run take the run's rule: Authorize on ana's session
// after her run hides it from bo and lets her share it to him for reading; AuthorizeOwned
// (a workflow run names its owner) lets ana and admins and operators reach hers and
// hides it from bo and from a caller without an id; Admit runs an admin's run for the
// user he names by her id, and refuses a workflow's derived session to a user, and to
// an admin once it holds a run.
func TestTheDoorDecidesReadsAndAdmissionsByTheRunsRule(t *testing.T) {
	h := openDoorHost(t)
	ctx := context.Background()
	as, _ := h.Access()
	u, err := as.AddUser(ctx, access.User{Name: "ana", Role: access.RoleUser, TokenHash: access.HashToken("t-ana")})
	if err != nil {
		t.Fatal(err)
	}
	ana := access.Principal{ID: u.ID, Name: "ana", Role: access.RoleUser}
	bo := access.Principal{ID: "u-bo", Name: "bo", Role: access.RoleUser}
	root := access.Principal{ID: "u-root", Name: "root", Role: access.RoleAdmin}
	op := access.Principal{ID: "u-op", Name: "op", Role: access.RoleOperator}
	d := h.Door()
	if _, err := d.Run(ctx, ana, loop.RunInput{SessionID: "s-ana", Messages: []loop.Message{loop.UserMessage("hi")}}, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		who  access.Principal
		a    access.Action
		want error
	}{{ana, access.Read, nil}, {ana, access.Delete, nil}, {bo, access.Read, access.ErrNotVisible}, {root, access.Delete, nil}} {
		if err := d.Authorize(ctx, c.who, c.a, "s-ana"); !errors.Is(err, c.want) {
			t.Errorf("%s %s ana's session: %v, want %v", c.who.Name, c.a, err, c.want)
		}
	}
	if err := as.PutShare(ctx, access.Share{Session: "s-ana", User: bo.ID, Role: access.ShareViewer}); err != nil {
		t.Fatal(err)
	}
	if err := d.Authorize(ctx, bo, access.Read, "s-ana"); err != nil {
		t.Errorf("bo reads the session shared with him: %v", err)
	}
	if err := d.Authorize(ctx, bo, access.Write, "s-ana"); !errors.Is(err, access.ErrNotAllowed) {
		t.Errorf("bo writes a session he may only read: %v", err)
	}

	for _, c := range []struct {
		who  access.Principal
		want error
	}{{ana, nil}, {root, nil}, {op, nil}, {bo, access.ErrNotVisible}, {access.Principal{Name: "x", Role: access.RoleUser}, access.ErrNotVisible}} {
		if err := d.AuthorizeOwned(ctx, c.who, access.Write, ana.ID); !errors.Is(err, c.want) {
			t.Errorf("%s on ana's workflow run: %v, want %v", c.who.Name, err, c.want)
		}
	}
	if err := d.AuthorizeOwned(ctx, ana, access.Read, ""); !errors.Is(err, access.ErrNotVisible) {
		t.Errorf("ana on the store operator's run: %v", err)
	}

	in := loop.RunInput{SessionID: "s-for-ana", User: "ana"}
	if err := d.Admit(ctx, root, &in); err != nil || in.User != ana.ID {
		t.Fatalf("root's run for ana: %v, user %q (want her id %s)", err, in.User, ana.ID)
	}
	if owner, _ := as.Owner(ctx, "s-for-ana"); owner != ana.ID {
		t.Fatalf("root's run for ana made the session %q's", owner)
	}
	derived := "workflow:w:" + ana.ID + ":r1~step"
	if err := d.Admit(ctx, ana, &loop.RunInput{SessionID: derived}); !errors.Is(err, access.ErrNotAllowed) {
		t.Fatalf("ana starts a run in a derived session: %v", err)
	}
	if _, err := d.Run(ctx, root, loop.RunInput{SessionID: derived, Messages: []loop.Message{loop.UserMessage("hi")}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Admit(ctx, root, &loop.RunInput{SessionID: derived}); !errors.Is(err, access.ErrNotAllowed) {
		t.Fatalf("root continues a derived session: %v", err)
	}
}

// An abort goes through the door (Door.Abort, what POST .../abort and A2A tasks/cancel
// call): bo's abort of ana's run is refused as for a session that does not exist, never
// reaches the run and leaves no record; ana's reaches it and is recorded with her as the
// actor and whether a run was in progress.
func TestAnAbortIsAuthorisedByTheDoorAndRecordedWithTheCaller(t *testing.T) {
	h := openDoorHost(t)
	ctx := context.Background()
	ana := access.Principal{ID: "u-ana", Name: "ana", Role: access.RoleUser}
	bo := access.Principal{ID: "u-bo", Name: "bo", Role: access.RoleUser}
	d := h.Door()
	if _, err := d.Run(ctx, ana, loop.RunInput{SessionID: "s-ana", Messages: []loop.Message{loop.UserMessage("hi")}}, nil); err != nil {
		t.Fatal(err)
	}
	records := func() []audit.Record {
		var out []audit.Record
		recs, err := h.Store.(audit.Store).Audit(ctx, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Action == audit.ActionRunAbort {
				out = append(out, r)
			}
		}
		return out
	}
	var reached []string
	stop := func(who string, running bool) func(context.Context) (bool, error) {
		return func(context.Context) (bool, error) { reached = append(reached, who); return running, nil }
	}
	if ok, err := d.Abort(ctx, bo, "s-ana", "r1", stop("bo", true)); ok || !errors.Is(err, access.ErrNotVisible) {
		t.Fatalf("bo aborts ana's run: %v %v, want %v", ok, err, access.ErrNotVisible)
	}
	if len(reached) != 0 || len(records()) != 0 {
		t.Fatalf("bo's refused abort reached %v, recorded %+v", reached, records())
	}
	if ok, err := d.Abort(ctx, ana, "s-ana", "r1", stop("ana", true)); !ok || err != nil {
		t.Fatalf("ana aborts her run: %v %v", ok, err)
	}
	if ok, err := d.Abort(ctx, ana, "s-ana", "r2", stop("ana", false)); ok || err != nil {
		t.Fatalf("ana aborts a run not in progress: %v %v", ok, err)
	}
	recs := records()
	if len(reached) != 2 || len(recs) != 2 {
		t.Fatalf("reached %v, recorded %+v", reached, recs)
	}
	for i, want := range []struct{ target, stopped string }{{"s-ana/r1", "true"}, {"s-ana/r2", "false"}} {
		r := recs[i]
		if r.Actor != ana.ID || r.Target != want.target || r.Detail["stopped"] != want.stopped || r.Detail["actor_role"] != "user" {
			t.Errorf("record %d: %+v, want actor %s target %s stopped %s", i, r, ana.ID, want.target, want.stopped)
		}
	}
}
