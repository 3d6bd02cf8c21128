package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Commands are confined unless the entry says confine = false: an MCP server with no
// sandbox gets one with no network and read access to the paths its entry names (a
// script inside node_modules: the whole node_modules tree; an explicit cwd), not to the
// manifest's directory; a provider keeps its network and reads the files its options
// name. confine = "required" marks the spec; a url entry, a bad value and sandbox with
// confine = false are errors naming the key.
func TestCommandsAreConfinedByDefault(t *testing.T) {
	body := goodManifest + `
[[mcp_servers]]
name = "npm"
command = ["node", "lib/node_modules/pkg/dist/index.js", "-y", "missing.txt"]
[[mcp_servers]]
name = "cwd"
command = ["server"]
cwd = "data"
confine = "required"
sandbox = { write = ["out"], net = true }
[[mcp_servers]]
name = "free"
command = ["server"]
confine = false
`
	p := writeManifest(t, body)
	dir := filepath.Dir(p)
	must(t, os.MkdirAll(filepath.Join(dir, "lib/node_modules/pkg/dist"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "lib/node_modules/pkg/dist/index.js"), nil, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "fixture.json"), nil, 0o644))
	m, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	npm, cwd, free := m.MCPServers[0].Sandbox, m.MCPServers[1].Sandbox, m.MCPServers[2].Sandbox
	if npm == nil || !npm.NoNet() || npm.Required || strings.Join(npm.Read, ",") != filepath.Join(dir, "lib/node_modules") || len(npm.Write) != 0 {
		t.Fatalf("default mcp server: %+v", npm)
	}
	if cwd == nil || cwd.NoNet() || !cwd.Required || strings.Join(cwd.Read, ",") != filepath.Join(dir, "data") || strings.Join(cwd.Write, ",") != filepath.Join(dir, "out") {
		t.Fatalf("required mcp server with a cwd: %+v", cwd)
	}
	if free != nil {
		t.Fatalf("confine = false: %+v", free)
	}
	prov := m.Providers["scripted"].Sandbox
	if prov == nil || prov.NoNet() || prov.Required || len(prov.Read) != 0 {
		t.Fatalf("default provider (its script option unset): %+v", prov)
	}
	t.Setenv("AGENTHOST_TEST_SCRIPT", "fixture.json")
	if m, err = Load(p); err != nil {
		t.Fatal(err)
	}
	if prov := m.Providers["scripted"].Sandbox; strings.Join(prov.Read, ",") != filepath.Join(dir, "fixture.json") {
		t.Fatalf("default provider reads its script: %+v", prov)
	}
	for _, c := range []struct{ entry, want string }{
		{"[[mcp_servers]]\nname = \"r\"\nurl = \"http://127.0.0.1:1/mcp\"\nconfine = \"required\"\n", `mcp_servers[0].sandbox: sandbox and confine confine a command; mcp server "r" has a url`},
		{"[[mcp_servers]]\nname = \"x\"\ncommand = [\"server\"]\nconfine = \"maybe\"\n", `confine: want true, false or "required", got maybe`},
		{"[[mcp_servers]]\nname = \"x\"\ncommand = [\"server\"]\nconfine = false\nsandbox = { net = false }\n", "mcp_servers[0].sandbox: sandbox confines the command, and confine = false says not to"},
	} {
		if _, err := Load(writeManifest(t, goodManifest+"\n"+c.entry)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.entry, err, c.want)
		}
	}
}
