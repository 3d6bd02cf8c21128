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
	if err := as.AddUser(ctx, access.User{Name: name, Role: role, Created: time.Now().UTC(), TokenHash: hash}); err != nil {
		return "", err
	}
	return tok, h.Audit(ctx, audit.Record{Action: audit.ActionUserAdd, Actor: actor, Target: "user:" + name,
		Detail: map[string]string{"role": string(role)}})
}

// RemoveUser removes a user (their token stops working at once) and the shares granted
// to them; their sessions and memories stay (EraseUser deletes those).
func (h *Host) RemoveUser(ctx context.Context, name, actor string) error {
	as, ok := h.Access()
	if !ok {
		return fmt.Errorf("the %s store keeps no users", h.Manifest.Store.Kind)
	}
	if err := as.RemoveUser(ctx, name); err != nil {
		return err
	}
	return h.Audit(ctx, audit.Record{Action: audit.ActionUserRemove, Actor: actor, Target: "user:" + name})
}
