package manifest

import "fmt"

// checkRuntimes checks the entries that ask for their runtime to be prepared before each
// run (prepare = true): an MCP server reached with each user's own token has no one
// connection to prepare.
func (m *Manifest) checkRuntimes() error {
	for i, s := range m.MCPServers {
		if s.Prepare && s.PerUser() {
			return m.ErrorAt(fmt.Sprintf("mcp_servers.%d.prepare", i), "mcp server %q is reached with each user's own account (auth = \"per_user\"): there is no one connection to prepare before a run", s.Name)
		}
	}
	return nil
}
