package manifest

import (
	"fmt"
	"strings"
)

// Per-user credentials (docs/credentials.md): an [[mcp_servers]] entry with
// auth = "per_user" is reached with the calling user's own token (each user signs in
// with `agenthost mcp login NAME --user U`, or the link a run that needs it gives).

// AuthPerUser is an [[mcp_servers]] entry's auth for the calling user's own token.
const AuthPerUser = "per_user"

// checkMCPAuth checks an entry's auth: "" or "host" (the one token of the host) or
// "per_user", which needs the authorization code grant (a person signs in).
func (m *Manifest) checkMCPAuth(key string, s *MCPServerConfig) error {
	switch s.Auth {
	case "", "host":
		if s.OAuth != nil && s.OAuth.RedirectURL != "" {
			return m.ErrorAt(key+".oauth.redirect_url", "redirect_url is for auth = %q (users sign in through the server)", AuthPerUser)
		}
		return nil
	case AuthPerUser:
	default:
		return m.ErrorAt(key+".auth", "auth %q: want \"host\" (the default) or %q", s.Auth, AuthPerUser)
	}
	if !s.OAuth.AuthCode() {
		return m.ErrorAt(key+".auth", "auth = %q needs an oauth table a person signs in to (authorize_url, or neither URL: discovered)", AuthPerUser)
	}
	return checkEndpoint(m, key+".oauth.redirect_url", s.OAuth.RedirectURL)
}

// PerUser says the entry is reached with each calling user's own token.
func (c *MCPServerConfig) PerUser() bool { return c.Auth == AuthPerUser }

// A plugin's config value may be each calling user's own secret:
// config = { token = { secret = "github", per_user = true } }. The user sets it (HTTP
// PUT /v1/secrets/NAME, `agenthost secrets set NAME`); the host gives it to the plugin
// for that user's calls only (host/usersecrets.go). Such a plugin runs each call on a
// fresh instance (isolation = "call"), so no instance another user's call gets has
// held it.

// ConfigMap is [plugins.permissions] config: strings (${VAR} expanded), or per-user
// secrets, which decoding marks and checkUserSecrets moves to UserSecrets.
type ConfigMap map[string]string

// userSecretMark prefixes a per-user secret's name in a decoded ConfigMap, until
// checkUserSecrets takes it out; no value keeps it.
const userSecretMark = "\x00agenthost:per_user_secret:"

// UnmarshalTOML accepts a table of strings and of { secret = "NAME", per_user = true }.
func (c *ConfigMap) UnmarshalTOML(v any) error {
	t, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("config is a table of strings, not %T", v)
	}
	*c = ConfigMap{}
	for k, val := range t {
		switch val := val.(type) {
		case string:
			if strings.HasPrefix(val, userSecretMark) {
				return fmt.Errorf("config %s: a value may not start with a NUL", k)
			}
			(*c)[k] = val
		case map[string]any:
			name, _ := val["secret"].(string)
			perUser, _ := val["per_user"].(bool)
			if len(val) != 2 || !perUser || !validSecretName(name) {
				return fmt.Errorf("config %s: a secret is { secret = \"NAME\", per_user = true } (NAME: letters, digits, _ . -, at most 64)", k)
			}
			(*c)[k] = userSecretMark + name
		default:
			return fmt.Errorf("config %s: a value is a string or { secret = \"NAME\", per_user = true }, not %T", k, val)
		}
	}
	return nil
}

// validSecretName is a secret's name: 1 to 64 of letters, digits, _ . and -.
func validSecretName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return false
		}
	}
	return true
}

// ValidSecretName says whether n may name a user's secret.
func ValidSecretName(n string) bool { return validSecretName(n) }

// checkUserSecrets moves a plugin's per-user secrets out of its config and makes it
// run each call on a fresh instance (any other isolation is refused).
func (m *Manifest) checkUserSecrets(p *PluginConfig, key string) error {
	for k, v := range p.Permissions.Config {
		name, ok := strings.CutPrefix(v, userSecretMark)
		if !ok {
			continue
		}
		if p.Permissions.UserSecrets == nil {
			p.Permissions.UserSecrets = map[string]string{}
		}
		p.Permissions.UserSecrets[k] = name
		delete(p.Permissions.Config, k)
	}
	if len(p.Permissions.UserSecrets) == 0 {
		return nil
	}
	switch p.Permissions.Isolation {
	case "":
		p.Permissions.Isolation = "call"
	case "call":
	default:
		return m.ErrorAt(key+".permissions.isolation", "plugin %q takes per-user secrets, so each call runs on a fresh instance: isolation = \"call\", not %q",
			p.Name, p.Permissions.Isolation)
	}
	return nil
}
