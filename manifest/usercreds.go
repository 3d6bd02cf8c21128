package manifest

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
