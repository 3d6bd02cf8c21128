package access_test

import (
	"testing"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/access/accesstest"
)

func TestInMemoryConforms(t *testing.T) {
	accesstest.Run(t, func(*testing.T) access.Store { return &access.InMemory{} })
}

// The rule, case by case: who may do what to a session owned by ana and shared with bo
// (editor) and cy (viewer).
func TestAllowedRuleMatchesIDsNotNames(t *testing.T) {
	shares := []access.Share{{Session: "s", User: "bo", Role: access.ShareEditor}, {Session: "s", User: "cy", Role: access.ShareViewer}}
	// Owners and shares name ids; the principals here use their name as their id.
	p := func(n string, r access.Role) access.Principal { return access.Principal{ID: n, Name: n, Role: r} }
	cases := []struct {
		who  access.Principal
		want map[access.Action]bool
	}{
		{p("root", access.RoleAdmin), map[access.Action]bool{access.Read: true, access.Write: true, access.ShareIt: true, access.Delete: true}},
		{p("op", access.RoleOperator), map[access.Action]bool{access.Read: true, access.Write: true, access.ShareIt: true, access.Delete: true}},
		{p("ana", access.RoleUser), map[access.Action]bool{access.Read: true, access.Write: true, access.ShareIt: true, access.Delete: true}},
		{p("ana", access.RoleViewer), map[access.Action]bool{access.Read: true}},
		{p("bo", access.RoleUser), map[access.Action]bool{access.Read: true, access.Write: true}},
		{p("bo", access.RoleViewer), map[access.Action]bool{access.Read: true}},
		{p("cy", access.RoleUser), map[access.Action]bool{access.Read: true}},
		{p("dee", access.RoleUser), map[access.Action]bool{}},
		{p("", access.RoleUser), map[access.Action]bool{}},
	}
	for _, c := range cases {
		for _, a := range []access.Action{access.Read, access.Write, access.ShareIt, access.Delete} {
			if got := access.Allowed(c.who, a, "ana", shares); got != c.want[a] {
				t.Errorf("Allowed(%s as %s, %s) = %v, want %v", c.who.Name, c.who.Role, a, got, c.want[a])
			}
		}
	}
	// The name is a label: another identity under ana's name (ana removed and added
	// again) is not the owner, and neither is a caller with ana's name and no id.
	for _, who := range []access.Principal{{ID: "u_new", Name: "ana", Role: access.RoleUser}, {Name: "ana", Role: access.RoleUser}} {
		if access.Allowed(who, access.Read, "ana", shares) {
			t.Errorf("%+v read the session of the id ana by name", who)
		}
	}
	// An ownerless session: only admin and operator.
	if access.Allowed(p("ana", access.RoleUser), access.Read, "", nil) {
		t.Error("a user read an ownerless session")
	}
	if !access.Allowed(p("op", access.RoleOperator), access.Read, "", nil) {
		t.Error("an operator could not read an ownerless session")
	}
}

func TestTokensAreRandomAndHashed(t *testing.T) {
	a, ha, err := access.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	b, hb, _ := access.NewToken()
	if a == b || ha == hb || len(a) != len(access.TokenPrefix)+43 || a[:3] != "ah_" || access.HashToken(a) != ha || len(ha) != 64 {
		t.Fatalf("tokens %q %q hashes %q %q", a, b, ha, hb)
	}
}
