package manifest

import (
	"strings"
	"testing"
)

// An oauth table names both grants' endpoints, or neither (they are discovered, and a
// person signs in with `mcp login`); a half-named one, a secret without its client, or an
// oauth table on a command entry is refused with the key.
func TestManifestMCPOAuthIsExplicitOrDiscovered(t *testing.T) {
	entry := "\n[[mcp_servers]]\nname = \"remote\"\nurl = \"https://mcp.example.com/mcp\"\n[mcp_servers.oauth]\n"
	for _, c := range []struct{ oauth, want string }{
		{``, "discover"},
		{`client_id = "https://agent.example.com/client.json"`, "discover"},
		{"client_id = \"app\"\nclient_secret_env = \"S\"", "discover"},
		{`scopes = ["docs:read"]`, "discover"},
		{"authorize_url = \"https://as.example.com/a\"\ntoken_url = \"https://as.example.com/t\"\nclient_id = \"app\"", "code"},
		{"token_url = \"https://as.example.com/t\"\nclient_id = \"app\"\nclient_secret_env = \"S\"", "credentials"},
		{`client_secret_env = "S"`, "mcp_servers[0].oauth.client_secret_env: a client secret needs its client_id"},
		{"authorize_url = \"https://as.example.com/a\"\nclient_id = \"app\"", "mcp_servers[0].oauth: oauth needs token_url, client_id"},
		{"token_url = \"https://as.example.com/t\"", "mcp_servers[0].oauth: oauth needs token_url, client_id"},
	} {
		m, err := Load(writeManifest(t, goodManifest+entry+c.oauth+"\n"))
		got := ""
		switch {
		case err != nil:
			got = err.Error()
		case m.MCPServers[0].OAuth.Discover():
			got = "discover"
		case m.MCPServers[0].OAuth.AuthCode():
			got = "code"
		default:
			got = "credentials"
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("%q: got %q, want %q", c.oauth, got, c.want)
		}
	}
	cmd := "\n[[mcp_servers]]\nname = \"local\"\ncommand = [\"x\"]\n[mcp_servers.oauth]\n"
	if _, err := Load(writeManifest(t, goodManifest+cmd)); err == nil || !strings.Contains(err.Error(), "mcp_servers[0].oauth: oauth needs a url entry") {
		t.Fatalf("oauth on a command: %v", err)
	}
}
