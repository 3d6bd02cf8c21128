package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
	"github.com/agenthost/agenthost/sandbox"
)

// Per-user plugin secrets (docs/credentials.md): a plugin's config value
// { secret = "NAME", per_user = true } is the calling user's own secret NAME, set by the
// user (PUT /v1/secrets/NAME, `agenthost secrets set NAME`) and kept in the store's
// key/value table under the user's id, sealed like every stored value (the seal's
// associated data names the user). It is read for a call of that user's run and given to
// the plugin as config for that call only (sandbox.WithCallConfig); it is never shown
// back (only names are listed), and no event, trace, audit record or model message
// carries it. A call whose user has not set it is interrupted, asking the user to.

// userSecretsKV holds each user's secrets (userKey: the user's id, then the name).
const userSecretsKV = "agenthost/secrets"

// maxSecretLen bounds a secret's value, in bytes.
const maxSecretLen = 16 << 10

// Audit actions of a user's secrets (the name, never the value).
const (
	ActionSecretSet    = "secret.set"
	ActionSecretDelete = "secret.delete"
)

// badSecret is a refused name or value: the caller's mistake (a surface answers 400).
type badSecret string

func (e badSecret) Error() string    { return string(e) }
func (e badSecret) BadRequest() bool { return true }

// SetUserSecret stores user's secret name (audited with actor, without the value).
func (h *Host) SetUserSecret(ctx context.Context, user, name, value, actor string) error {
	switch {
	case user == "":
		return fmt.Errorf("%w: a secret is a user's, and this caller has no identity", access.ErrNotAllowed)
	case !manifest.ValidSecretName(name):
		return badSecret(fmt.Sprintf("secret name %q: letters, digits, _ . and -, at most 64", name))
	case value == "" || len(value) > maxSecretLen || !utf8.ValidString(value):
		return badSecret(fmt.Sprintf("secret %s: a value is 1 to %d bytes of UTF-8", name, maxSecretLen))
	}
	if err := loop.CheckUser(user); err != nil {
		return err
	}
	if err := h.Store.KVSet(ctx, userSecretsKV, userKey(user, name), []byte(value)); err != nil {
		return err
	}
	return h.Audit(ctx, audit.Record{Action: ActionSecretSet, Actor: actorOf(actor), Target: "user:" + user, Detail: map[string]string{"secret": name}})
}

// DeleteUserSecret forgets user's secret name; it reports whether there was one.
func (h *Host) DeleteUserSecret(ctx context.Context, user, name, actor string) (bool, error) {
	b, ok, err := h.Store.KVGet(ctx, userSecretsKV, userKey(user, name))
	if err != nil || !ok || len(b) == 0 { // an empty value is a deleted one
		return false, err
	}
	if err := h.Store.KVSet(ctx, userSecretsKV, userKey(user, name), nil); err != nil {
		return false, err
	}
	return true, h.Audit(ctx, audit.Record{Action: ActionSecretDelete, Actor: actorOf(actor), Target: "user:" + user, Detail: map[string]string{"secret": name}})
}

// UserSecretNames lists the names of user's secrets (never their values), sorted.
func (h *Host) UserSecretNames(ctx context.Context, user string) ([]string, error) {
	kl, ok := h.Store.(loop.KVLister)
	if !ok {
		return nil, errors.New("this store cannot list keys")
	}
	keys, err := kl.KVKeys(ctx, userSecretsKV, user+"\n", -1)
	if err != nil {
		return nil, err
	}
	names := []string{}
	for _, k := range keys {
		if b, ok, err := h.Store.KVGet(ctx, userSecretsKV, k); err == nil && ok && len(b) > 0 {
			names = append(names, strings.TrimPrefix(k, user+"\n"))
		}
	}
	slices.Sort(names)
	return names, nil
}

// SetSecret sets p's own secret name.
func (d *Door) SetSecret(ctx context.Context, p access.Principal, name, value string) error {
	return d.h.SetUserSecret(ctx, identity(p), name, value, identity(p))
}

// DeleteSecret forgets p's own secret name.
func (d *Door) DeleteSecret(ctx context.Context, p access.Principal, name string) (bool, error) {
	return d.h.DeleteUserSecret(ctx, identity(p), name, identity(p))
}

// Secrets lists the names of p's own secrets.
func (d *Door) Secrets(ctx context.Context, p access.Principal) ([]string, error) {
	return d.h.UserSecretNames(ctx, identity(p))
}

// withUserSecrets gives each tool of a plugin with per-user secrets what reads them
// for its calls.
func (h *Host) withUserSecrets(tools []loop.Tool, warnings []string) ([]loop.Tool, []string) {
	want := map[string]map[string]string{}
	for _, p := range h.Manifest.Plugins {
		if len(p.Permissions.UserSecrets) > 0 {
			want[p.Name] = p.Permissions.UserSecrets
		}
	}
	for _, t := range tools {
		if pt, ok := t.(*pluginTool); ok && want[pt.plugin.Name()] != nil {
			secrets := want[pt.plugin.Name()]
			pt.secrets = func(ctx context.Context) (context.Context, error) { return h.callSecrets(ctx, secrets) }
		}
	}
	return tools, warnings
}

// callSecrets is ctx carrying the run's user's secrets as the call's config (config key
// → secret name in secrets); an InputRequiredError when the user has not set one.
func (h *Host) callSecrets(ctx context.Context, secrets map[string]string) (context.Context, error) {
	info, _ := loop.CallInfoFrom(ctx)
	if info.User == "" {
		return ctx, errors.New("this tool takes the calling user's own secrets, and this run has no user")
	}
	cfg := map[string]string{}
	var missing []string
	for key, name := range secrets {
		b, ok, err := h.Store.KVGet(ctx, userSecretsKV, userKey(info.User, name))
		if err != nil {
			return ctx, fmt.Errorf("read the user's secret %s: %w", name, err)
		}
		if !ok || len(b) == 0 {
			missing = append(missing, name)
			continue
		}
		cfg[key] = string(b)
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		missing = slices.Compact(missing)
		return ctx, &loop.InputRequiredError{Request: loop.InputRequest{Message: fmt.Sprintf(
			"Set your secret %s to go on: PUT /v1/secrets/NAME {\"value\": …} on this agent's server "+
				"(or `agenthost secrets set NAME --user %s`, the value on stdin), then resume the run. "+
				"Do not give it as the answer here: answers are stored with the session.", strings.Join(missing, ", "), info.User)}}
	}
	return sandbox.WithCallConfig(ctx, cfg), nil
}

// eraseCredentials forgets (or, dry, counts) user's MCP tokens and secrets.
func (h *Host) eraseCredentials(ctx context.Context, user string, dryRun bool) (int, error) {
	kl, ok := h.Store.(loop.KVLister)
	if !ok {
		return 0, nil
	}
	n := 0
	for _, ns := range []string{userTokensKV, userSecretsKV} {
		keys, err := kl.KVKeys(ctx, ns, user+"\n", -1)
		if err != nil {
			return n, err
		}
		for _, k := range keys {
			if b, ok, err := h.Store.KVGet(ctx, ns, k); err != nil || !ok || len(b) == 0 {
				if err != nil {
					return n, err
				}
				continue
			}
			n++
			if !dryRun {
				if err := h.Store.KVSet(ctx, ns, k, nil); err != nil {
					return n, err
				}
			}
		}
	}
	return n, nil
}

// withSecrets puts the run's user's secrets on ctx for a tool whose plugin takes them;
// stop says the call ends here, with out and err (an InputRequiredError, or an error
// result).
func (t *pluginTool) withSecrets(ctx context.Context) (_ context.Context, out loop.ToolResult, stop bool, err error) {
	if t.secrets == nil {
		return ctx, out, false, nil
	}
	var ierr *loop.InputRequiredError
	switch ctx, err = t.secrets(ctx); {
	case errors.As(err, &ierr):
		return ctx, out, true, err
	case err != nil:
		return ctx, loop.ErrorResult("Error: " + err.Error()), true, nil
	}
	return ctx, out, false, nil
}
