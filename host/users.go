package host

import (
	"context"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/audit"
)

// Access is the store's users, owners and shares, when the store keeps them (SQLite and
// PostgreSQL do; a host without a store does not).
func (h *Host) Access() (access.Store, bool) {
	as, ok := h.Store.(access.Store)
	return as, ok
}

// AddUser adds a user of the API with a new token, which it returns: the store keeps
// only the token's hash, so this is the one time it can be shown. The addition is
// audited with the actor.
func (h *Host) AddUser(ctx context.Context, name string, role access.Role, actor string) (string, error) {
	as, ok := h.Access()
	if !ok {
		return "", fmt.Errorf("the %s store keeps no users", h.Manifest.Store.Kind)
	}
	tok, hash, err := access.NewToken()
	if err != nil {
		return "", err
	}
	u, err := as.AddUser(ctx, access.User{Name: name, Role: role, Created: time.Now().UTC(), TokenHash: hash})
	if err != nil {
		return "", err
	}
	return tok, h.Audit(ctx, audit.Record{Action: audit.ActionUserAdd, Actor: actor, Target: "user:" + u.ID,
		Detail: map[string]string{"role": string(role), "name": name}})
}

// RemoveUser removes a user (their token stops working at once) and the shares granted
// to them; their sessions and memories stay (EraseUser deletes those).
func (h *Host) RemoveUser(ctx context.Context, name, actor string) error {
	as, ok := h.Access()
	if !ok {
		return fmt.Errorf("the %s store keeps no users", h.Manifest.Store.Kind)
	}
	u, ok, err := access.Lookup(ctx, as, name)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("remove user %q: %w", name, access.ErrNoSuchUser)
	}
	if err := as.RemoveUser(ctx, name); err != nil {
		return err
	}
	return h.Audit(ctx, audit.Record{Action: audit.ActionUserRemove, Actor: actor, Target: "user:" + u.ID,
		Detail: map[string]string{"name": name}})
}

// ResolveUser turns how an operator names a user (the CLI's --user, `users erase`) into
// the identity the store keys them by: the id of the present user of that name, or the
// string itself when it is an id (a removed user's, an OIDC user's) or no user's name
// (a label for local runs, which no account inherits: a user added later under that
// name gets a new id).
func (h *Host) ResolveUser(ctx context.Context, name string) (string, error) {
	as, ok := h.Access()
	if !ok || name == "" || access.IsID(name) {
		return name, nil
	}
	u, found, err := access.Lookup(ctx, as, name)
	if err != nil {
		return "", fmt.Errorf("user %q: %w", name, err)
	}
	if found {
		return u.ID, nil
	}
	return name, nil
}
