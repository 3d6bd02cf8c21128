package access

import (
	"context"
	"errors"
)

// Refusals Authorize answers with. A surface maps them to its wire (HTTP 404 and 403):
// ErrNotVisible is the same answer for an object that does not exist and for one the
// caller may not read, so a refusal never tells that it exists.
var (
	ErrNotVisible = errors.New("not found")
	ErrNotAllowed = errors.New("not allowed")
)

// Authorize decides whether p may take action a on the session, from its owner and
// shares in s (Allowed is the rule): nil when allowed, ErrNotVisible when p may not even
// read it, ErrNotAllowed when p may read but not do a, or the store's error. A nil store
// keeps no owners: everything is allowed. This is the one decision every entrance asks
// (host.Door, and the server's routes on stored sessions).
func Authorize(ctx context.Context, s Store, p Principal, a Action, session string) error {
	if s == nil || p.Privileged() {
		return nil
	}
	owner, err := s.Owner(ctx, session)
	if err != nil {
		return err
	}
	shares, err := s.Shares(ctx, session)
	if err != nil {
		return err
	}
	if Allowed(p, a, owner, shares) {
		return nil
	}
	if !Allowed(p, Read, owner, shares) {
		return ErrNotVisible
	}
	return ErrNotAllowed
}

type principalKey struct{}

// WithPrincipal carries the caller's principal on ctx, from the surface that
// authenticated it to what it calls (host.Door, a plugin's create_message).
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom is the principal WithPrincipal put on ctx; ok is false when none was.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
