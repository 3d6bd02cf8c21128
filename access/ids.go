package access

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// Identities. A user's id is minted once, when the user is added, and never changes or
// comes back: "u_" and 128 random bits in hex. Removing a user and adding the name again
// mints a new id, so nothing keyed by the old one (sessions they own, shares, memories)
// reaches the new account. An OIDC caller's id is derived from the token's issuer and
// subject (OIDCID): the subject is the identity provider's immutable id for the user,
// and the issuer keeps two providers' subjects apart; the name claim is only the label.

// UserIDPrefix starts every minted user id; OIDCIDPrefix every id derived from OIDC.
const (
	UserIDPrefix = "u_"
	OIDCIDPrefix = "o_"
)

// NewUserID mints a user id.
func NewUserID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return UserIDPrefix + hex.EncodeToString(b[:]), nil
}

// OIDCID is the id of an OIDC caller: "o_" and the first 128 bits of the sha256 of the
// issuer and the subject (NUL between them, so no pair can be written to look like
// another), in hex. The same person at the same issuer has the same id on every node
// and across restarts without any registration.
func OIDCID(issuer, subject string) string {
	sum := sha256.Sum256([]byte(issuer + "\x00" + subject))
	return OIDCIDPrefix + hex.EncodeToString(sum[:16])
}

// IsID reports whether s has the shape of a user id (minted or derived from OIDC).
func IsID(s string) bool {
	if len(s) != len(UserIDPrefix)+32 || (s[:2] != UserIDPrefix && s[:2] != OIDCIDPrefix) {
		return false
	}
	_, err := hex.DecodeString(s[2:])
	return err == nil
}

// Lookup finds the present user named name.
func Lookup(ctx context.Context, s Store, name string) (User, bool, error) {
	users, err := s.Users(ctx)
	if err != nil {
		return User{}, false, err
	}
	for _, u := range users {
		if u.Name == name {
			return u, true, nil
		}
	}
	return User{}, false, nil
}

// Names maps the present users' ids to their names, for listings that show who a
// record is for or by (the approval grants of the API, the console and the CLI: one
// lookup, so they agree). The names are a label: a store without users (s nil) or a
// user list that cannot be read gives none, and the listing shows the ids.
func Names(ctx context.Context, s Store) map[string]string {
	names := map[string]string{}
	if s == nil {
		return names
	}
	if users, err := s.Users(ctx); err == nil {
		for _, u := range users {
			names[u.ID] = u.Name
		}
	}
	return names
}

// ErrNotOwned is returned by Claim for an object that belongs to someone else. Callers
// answer it exactly as they answer an object that does not exist, naming neither.
var ErrNotOwned = errors.New("not found")

// Claim makes owner (an id; "" for the operator of the store, e.g. the CLI) the owner of
// a derived object keyed by key (a workflow step's session, a run's lease session) or
// confirms it already is. Another owner's object, or for owner "" any owned object, is
// ErrNotOwned: a name someone else made first is never joined, so nobody can pre-create
// an object under a name another user's run will use and read what it writes there.
func Claim(ctx context.Context, s Store, key, owner string) error {
	if s == nil {
		return nil
	}
	if owner == "" {
		o, err := s.Owner(ctx, key)
		if err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		if o != "" {
			return ErrNotOwned
		}
		return nil
	}
	o, err := s.ClaimOwner(ctx, key, owner)
	if err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	if o != owner {
		return ErrNotOwned
	}
	return nil
}
