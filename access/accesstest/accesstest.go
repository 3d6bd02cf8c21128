// Package accesstest is the conformance suite every access.Store passes: the in-memory
// one, SQLite and PostgreSQL run the same assertions.
package accesstest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/access"
)

// Run runs the suite against a fresh, empty store from open.
func Run(t *testing.T, open func(t *testing.T) access.Store) {
	t.Run("UsersAreFoundByTokenHashOnly", func(t *testing.T) { usersByToken(t, open(t)) })
	t.Run("RemovingAUserRemovesTheirShares", func(t *testing.T) { removeUser(t, open(t)) })
	t.Run("FirstOwnerClaimWins", func(t *testing.T) { claimOwner(t, open(t)) })
	t.Run("SharesReplaceAndRevoke", func(t *testing.T) { shares(t, open(t)) })
	t.Run("HostileNamesAreRefused", func(t *testing.T) { hostile(t, open(t)) })
	t.Run("UsersGetAnImmutableIDNeverSeenBefore", func(t *testing.T) { ids(t, open(t)) })
	t.Run("ANameRemovedAndAddedAgainIsANewIdentity", func(t *testing.T) { readd(t, open(t)) })
	t.Run("DerivedObjectsAreClaimedForTheirOwnerOnly", func(t *testing.T) { claimDerived(t, open(t)) })
}

func claimDerived(t *testing.T, s access.Store) {
	ctx := context.Background()
	if err := access.Claim(ctx, s, "workflow:w:u_a:r~step", "u_a"); err != nil {
		t.Fatalf("first claim: %v", err)
	}
	if err := access.Claim(ctx, s, "workflow:w:u_a:r~step", "u_a"); err != nil {
		t.Fatalf("the owner's second claim: %v", err)
	}
	for _, other := range []string{"u_b", ""} {
		if err := access.Claim(ctx, s, "workflow:w:u_a:r~step", other); !errors.Is(err, access.ErrNotOwned) {
			t.Fatalf("claim by %q of u_a's: %v, want ErrNotOwned", other, err)
		}
	}
	if err := access.Claim(ctx, s, "workflow:w:r~step", ""); err != nil {
		t.Fatalf("the operator's claim of an unowned one: %v", err)
	}
	if o, _ := s.Owner(ctx, "workflow:w:r~step"); o != "" {
		t.Fatalf("the operator's claim recorded owner %q", o)
	}
}

func user(name string, role access.Role) (access.User, string) {
	tok, hash, err := access.NewToken()
	if err != nil {
		panic(err)
	}
	return access.User{Name: name, Role: role, Created: time.Now().UTC().Truncate(time.Millisecond), TokenHash: hash}, tok
}

func usersByToken(t *testing.T, s access.Store) {
	ctx := context.Background()
	ana, anaTok := user("ana", access.RoleUser)
	bo, _ := user("bo", access.RoleAdmin)
	for _, u := range []access.User{ana, bo} {
		if _, err := s.AddUser(ctx, u); err != nil {
			t.Fatalf("AddUser(%s): %v", u.Name, err)
		}
	}
	if _, err := s.AddUser(ctx, ana); !errors.Is(err, access.ErrUserExists) {
		t.Fatalf("AddUser twice: got %v, want ErrUserExists", err)
	}
	got, ok, err := s.UserByToken(ctx, access.HashToken(anaTok))
	if err != nil || !ok || got.Name != "ana" || got.Role != access.RoleUser || !got.Created.Equal(ana.Created) {
		t.Fatalf("UserByToken(ana's) = %+v, %v, %v", got, ok, err)
	}
	if _, ok, err := s.UserByToken(ctx, access.HashToken(anaTok+"x")); ok || err != nil {
		t.Fatalf("UserByToken(other) = %v, %v; want not found", ok, err)
	}
	if _, ok, _ := s.UserByToken(ctx, anaTok); ok {
		t.Fatal("a token itself (not its hash) found a user")
	}
	us, err := s.Users(ctx)
	if err != nil || len(us) != 2 || us[0].Name != "ana" || us[1].Name != "bo" || us[1].Role != access.RoleAdmin {
		t.Fatalf("Users = %+v, %v", us, err)
	}
}

func removeUser(t *testing.T, s access.Store) {
	ctx := context.Background()
	ana, tok := user("ana", access.RoleUser)
	ana, err := s.AddUser(ctx, ana)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutShare(ctx, access.Share{Session: "s1", User: ana.ID, Role: access.ShareEditor, By: "bo", Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveUser(ctx, "ana"); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveUser(ctx, "ana"); !errors.Is(err, access.ErrNoSuchUser) {
		t.Fatalf("RemoveUser twice: %v, want ErrNoSuchUser", err)
	}
	if _, ok, _ := s.UserByToken(ctx, access.HashToken(tok)); ok {
		t.Fatal("a removed user's token still finds them")
	}
	if sh, _ := s.Shares(ctx, "s1"); len(sh) != 0 {
		t.Fatalf("a removed user's share stayed: %+v", sh)
	}
}

func claimOwner(t *testing.T, s access.Store) {
	ctx := context.Background()
	if o, err := s.Owner(ctx, "s1"); o != "" || err != nil {
		t.Fatalf("Owner of a new session = %q, %v", o, err)
	}
	var wg sync.WaitGroup
	winners := make([]string, 8)
	for i := range winners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := s.ClaimOwner(ctx, "s1", string(rune('a'+i)))
			if err != nil {
				t.Error(err)
			}
			winners[i] = o
		}()
	}
	wg.Wait()
	for _, w := range winners {
		if w != winners[0] {
			t.Fatalf("racing claims saw different owners: %q", winners)
		}
	}
	if o, _ := s.Owner(ctx, "s1"); o != winners[0] {
		t.Fatalf("Owner = %q, claims said %q", o, winners[0])
	}
	if o, _ := s.ClaimOwner(ctx, "s1", "zed"); o != winners[0] {
		t.Fatalf("a later claim took the session: %q", o)
	}
	if err := s.ForgetSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if o, _ := s.Owner(ctx, "s1"); o != "" {
		t.Fatalf("Owner after ForgetSession = %q", o)
	}
}

func shares(t *testing.T, s access.Store) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	for _, sh := range []access.Share{
		{Session: "s1", User: "cy", Role: access.ShareViewer, By: "ana", Created: now},
		{Session: "s1", User: "bo", Role: access.ShareViewer, By: "ana", Created: now},
		{Session: "s1", User: "bo", Role: access.ShareEditor, By: "ana", Created: now},
		{Session: "s2", User: "bo", Role: access.ShareViewer, By: "ana", Created: now},
	} {
		if err := s.PutShare(ctx, sh); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Shares(ctx, "s1")
	if err != nil || len(got) != 2 || got[0].User != "bo" || got[0].Role != access.ShareEditor || got[1].User != "cy" || got[0].By != "ana" || !got[0].Created.Equal(now) {
		t.Fatalf("Shares(s1) = %+v, %v", got, err)
	}
	if ids, _ := s.SharedWith(ctx, "bo"); len(ids) != 2 || ids[0] != "s1" || ids[1] != "s2" {
		t.Fatalf("SharedWith(bo) = %q", ids)
	}
	if err := s.RemoveShare(ctx, "s1", "bo"); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveShare(ctx, "s1", "bo"); !errors.Is(err, access.ErrNoSuchShare) {
		t.Fatalf("RemoveShare twice: %v", err)
	}
	if ids, _ := s.SharedWith(ctx, "bo"); len(ids) != 1 || ids[0] != "s2" {
		t.Fatalf("SharedWith(bo) after revoke = %q", ids)
	}
	if err := s.ForgetSession(ctx, "s2"); err != nil {
		t.Fatal(err)
	}
	if ids, _ := s.SharedWith(ctx, "bo"); len(ids) != 0 {
		t.Fatalf("a forgotten session's share stayed: %q", ids)
	}
}

func hostile(t *testing.T, s access.Store) {
	ctx := context.Background()
	u, _ := user("ana\x00root", access.RoleUser)
	if _, err := s.AddUser(ctx, u); err == nil {
		t.Fatal("a name with NUL was kept")
	}
	u, _ = user("u_0123456789abcdef0123456789abcdef", access.RoleUser)
	if _, err := s.AddUser(ctx, u); err == nil {
		t.Fatal("a name shaped like an id was kept")
	}
	u, _ = user("ana", "root")
	if _, err := s.AddUser(ctx, u); err == nil {
		t.Fatal("an unknown role was kept")
	}
	if err := s.PutShare(ctx, access.Share{Session: "s1", User: "bo", Role: "owner"}); err == nil {
		t.Fatal("an unknown share role was kept")
	}
	if err := s.PutShare(ctx, access.Share{Session: "s1", User: "\xff", Role: access.ShareViewer}); err == nil {
		t.Fatal("an invalid UTF-8 grantee was kept")
	}
}

func ids(t *testing.T, s access.Store) {
	ctx := context.Background()
	ana, tok := user("ana", access.RoleUser)
	ana.ID = "u_00000000000000000000000000000000" // a caller's id is not taken: the store mints
	kept, err := s.AddUser(ctx, ana)
	if err != nil {
		t.Fatal(err)
	}
	if !access.IsID(kept.ID) || kept.ID == ana.ID || kept.Name != "ana" {
		t.Fatalf("AddUser kept %+v: want a new minted id", kept)
	}
	got, ok, err := s.UserByToken(ctx, access.HashToken(tok))
	if err != nil || !ok || got.ID != kept.ID {
		t.Fatalf("UserByToken = %+v, %v, %v; want id %s", got, ok, err, kept.ID)
	}
	us, err := s.Users(ctx)
	if err != nil || len(us) != 1 || us[0].ID != kept.ID {
		t.Fatalf("Users = %+v, %v", us, err)
	}
	if found, ok, err := access.Lookup(ctx, s, "ana"); err != nil || !ok || found.ID != kept.ID {
		t.Fatalf("Lookup(ana) = %+v, %v, %v", found, ok, err)
	}
}

func readd(t *testing.T, s access.Store) {
	ctx := context.Background()
	u, _ := user("ana", access.RoleUser)
	old, err := s.AddUser(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	if o, err := s.ClaimOwner(ctx, "s-old", old.ID); err != nil || o != old.ID {
		t.Fatalf("ClaimOwner = %q, %v", o, err)
	}
	if err := s.PutShare(ctx, access.Share{Session: "s-shared", User: old.ID, Role: access.ShareEditor, By: "u_bo", Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveUser(ctx, "ana"); err != nil {
		t.Fatal(err)
	}
	u, _ = user("ana", access.RoleUser)
	fresh, err := s.AddUser(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	if fresh.ID == old.ID {
		t.Fatalf("ana added again got the old id %s", old.ID)
	}
	p := access.Principal{ID: fresh.ID, Name: "ana", Role: access.RoleUser}
	owner, _ := s.Owner(ctx, "s-old")
	if owner != old.ID || access.Allowed(p, access.Read, owner, nil) {
		t.Fatalf("the new ana reaches the old ana's session (owner %q)", owner)
	}
	if shared, _ := s.SharedWith(ctx, fresh.ID); len(shared) != 0 {
		t.Fatalf("the new ana has the old ana's shares: %q", shared)
	}
}
