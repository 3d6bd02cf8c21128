package manifest

import "fmt"

// checkRuntimes checks the entries that ask for their runtime to be prepared before each
// run (prepare = true): a plugin's must be a tool plugin whose instances outlive a call;
// an MCP server reached with each user's own token has no one connection to prepare.
// That a plugin exports prepare is the host's to check, once it is loaded.
func (m *Manifest) checkRuntimes() error {
	for i, p := range m.Plugins {
		key := fmt.Sprintf("plugins.%d.prepare", i)
		switch {
		case !p.Prepare:
		case p.Kind != "tool":
			return m.ErrorAt(key, "plugin %q is of kind %q: only a tool plugin's runtime is prepared", p.Name, p.Kind)
		case p.Permissions.Isolation == "call":
			return m.ErrorAt(key, "plugin %q has isolation = \"call\": each call gets a fresh instance, so none is left prepared", p.Name)
		}
	}
	for i, s := range m.MCPServers {
		if s.Prepare && s.PerUser() {
			return m.ErrorAt(fmt.Sprintf("mcp_servers.%d.prepare", i), "mcp server %q is reached with each user's own account (auth = \"per_user\"): there is no one connection to prepare before a run", s.Name)
		}
	}
	return nil
}
