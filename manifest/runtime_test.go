package manifest

import (
	"regexp"
	"strings"
	"testing"
)

// prepare = true on an [[mcp_servers]] entry asks for the server to be made ready before
// each run; a per-user server, which has no one connection, is refused at the key, with
// the file and line.
func TestMCPServerPrepareIsRefusedForAPerUserServerAtItsKey(t *testing.T) {
	entry := "\n[[mcp_servers]]\nname = \"remote\"\nurl = \"https://mcp.example.com/mcp\"\nprepare = true\n"
	m, err := Load(writeManifest(t, goodManifest+entry))
	if err != nil || !m.MCPServers[0].Prepare {
		t.Fatalf("prepare = true: %v", err)
	}
	perUser := `auth = "per_user"` + "\n" + `oauth = { authorize_url = "https://as.example.com/a", token_url = "https://as.example.com/t", client_id = "app" }` + "\n"
	_, err = Load(writeManifest(t, goodManifest+entry+perUser))
	if err == nil || !regexp.MustCompile(`agent\.toml:\d+: mcp_servers\[0\]\.prepare: mcp server "remote" is reached with each user's own account`).MatchString(err.Error()) {
		t.Fatalf("prepare on a per-user server: %v", err)
	}
	if _, err = Load(writeManifest(t, goodManifest+strings.Replace(entry, "prepare = true", "prepare = \"yes\"", 1))); err == nil {
		t.Fatal("prepare = \"yes\" was taken")
	}
}
