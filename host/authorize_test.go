package host

import (
	"context"
	"errors"
	"testing"

	"github.com/agenthost/agenthost/access"
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
