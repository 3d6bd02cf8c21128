package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/confine"
)

// With no sandbox and no confine key, an MCP server and the provider adapter run
// confined: the run completes through the confined adapter; the server reads no file its
// entry does not name and opens no socket (no network is an MCP server's default);
// confine = false runs one unconfined. plugins list says what this kernel enforces.
func TestE2E_CommandsAreConfinedByDefault(t *testing.T) {
	if confine.Available() == 0 {
		t.Skip("this kernel has no Landlock: commands run unconfined (TestE2E_AConfinedMCPServerReadsOnlyItsReadList checks the warning)")
	}
	echo := buildMCPEcho(t)
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "done"}]}`})
	secret := filepath.Join(t.TempDir(), "secret.txt")
	os.WriteFile(secret, []byte("outside"), 0o644)
	appendManifest(t, e.manifest, fmt.Sprintf("\n[[mcp_servers]]\nname = \"dflt\"\ncommand = [%q]\n[[mcp_servers]]\nname = \"free\"\ncommand = [%q]\nconfine = false\n", echo, echo))
	list := e.agenthost(t, "plugins", "list")
	for _, want := range []string{`dflt +mcp server \(confined\) +stdio`, `free +mcp server \(NOT SANDBOXED\) +stdio`, `scripted +provider \(confined\) +grpc`} {
		if !regexp.MustCompile(`(?m)^` + want).MatchString(list.stdout) {
			t.Errorf("plugins list lacks %q:\n%s", want, list.stdout)
		}
	}
	if want := "agenthost: confinement: " + confine.Detect().String() + "\n"; !strings.Contains(list.stderr, want) {
		t.Errorf("plugins list does not say what the kernel enforces (%q):\n%s", want, list.stderr)
	}
	call := func(server, tool, args string) string {
		r := e.agenthost(t, "plugins", "call", server, tool, args)
		if r.code != 0 {
			t.Fatalf("%s %s: exit %d %s %s", server, tool, r.code, r.stdout, r.stderr)
		}
		return r.stdout
	}
	read := fmt.Sprintf(`{"path": %q}`, secret)
	if got := call("dflt", "read", read); !strings.Contains(got, "permission denied") {
		t.Errorf("confined by default, read outside: %s", got)
	}
	if got := call("dflt", "dial", `{"addr": "127.0.0.1:9"}`); !strings.Contains(got, "address family not supported") {
		t.Errorf("confined by default, dial: %s", got)
	}
	if got := call("free", "read", read); !strings.Contains(got, "outside") {
		t.Errorf("confine = false, read: %s", got)
	}
	if r := e.agenthost(t, "run", "go"); r.code != 0 || strings.TrimSpace(r.stdout) != "done" {
		t.Fatalf("run through the confined adapter: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
}

// confine = "required" refuses to start a command whose confinement this kernel would
// enforce only partly (here a kernel made to look like Landlock ABI 5: no signal or
// abstract-socket scopes), MCP server or adapter, naming the entry; without it the
// command starts partly confined and the host warns of what is missing.
func TestE2E_RequiredConfinementRefusesAPartialOne(t *testing.T) {
	if confine.Available() < 6 {
		t.Skip("this kernel's Landlock ABI is below 6: the test caps it at 5 to make confinement partial")
	}
	t.Setenv(confine.ABIEnv, "5")
	echo := buildMCPEcho(t)
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "done"}]}`})
	base := string(must(os.ReadFile(e.manifest)))
	const partial = `confinement would be partial (confine = "required"): this kernel does not enforce signals and abstract Unix sockets (Landlock ABI 5 < 6)`
	os.WriteFile(e.manifest, []byte(base+fmt.Sprintf("\n[[mcp_servers]]\nname = \"strict\"\ncommand = [%q]\nconfine = \"required\"\n", echo)), 0o644)
	if r := e.agenthost(t, "plugins", "list"); r.code == 0 || !strings.Contains(r.stderr, `mcp_servers[0]: mcp server "strict": `+partial) {
		t.Fatalf("required mcp server on a partial kernel: exit %d\n%s", r.code, r.stderr)
	}
	os.WriteFile(e.manifest, []byte(strings.Replace(base, "[providers.scripted]\n", "[providers.scripted]\nconfine = \"required\"\n", 1)), 0o644)
	if r := e.agenthost(t, "run", "go"); r.code == 0 || !strings.Contains(r.stderr, `start provider "scripted": `+partial) {
		t.Fatalf("required adapter on a partial kernel: exit %d\n%s", r.code, r.stderr)
	}
	os.WriteFile(e.manifest, []byte(base+fmt.Sprintf("\n[[mcp_servers]]\nname = \"strict\"\ncommand = [%q]\n", echo)), 0o644)
	r := e.agenthost(t, "plugins", "list")
	if r.code != 0 || !strings.Contains(r.stderr, `mcp server "strict" is confined partly: this kernel does not enforce signals and abstract Unix sockets (Landlock ABI 5 < 6)`) ||
		!regexp.MustCompile(`(?m)^strict +mcp server \(partly confined\)`).MatchString(r.stdout) {
		t.Fatalf("best effort on a partial kernel: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
