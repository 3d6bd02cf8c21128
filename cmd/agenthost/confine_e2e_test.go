package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/confine"
)

// An MCP server started with a sandbox reads what its read list names and nothing else,
// and with net = false opens no TCP connection; the same server without a sandbox reads
// the other file and connects (what the confinement took away). Where the kernel has no
// Landlock, the host says so instead.
func TestE2E_AConfinedMCPServerReadsOnlyItsReadList(t *testing.T) {
	echo := buildMCPEcho(t)
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": []}`})
	inside, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(inside, "ok.txt"), []byte("inside"), 0o644)
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("outside"), 0o644)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	appendManifest(t, e.manifest, fmt.Sprintf(`
[[mcp_servers]]
name = "confined"
command = [%q]
sandbox = { read = [%q], net = false }
[[mcp_servers]]
name = "free"
command = [%q]
`, echo, inside, echo))
	call := func(server, tool, args string) string {
		r := e.agenthost(t, "plugins", "call", server, tool, args)
		if r.code != 0 {
			t.Fatalf("%s %s: exit %d %s %s", server, tool, r.code, r.stdout, r.stderr)
		}
		var res struct{ Content []struct{ Text string } }
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res.Content) != 1 {
			t.Fatalf("%s %s: %v %s", server, tool, err, r.stdout)
		}
		return res.Content[0].Text
	}
	okArgs := fmt.Sprintf(`{"path": %q}`, filepath.Join(inside, "ok.txt"))
	secretArgs := fmt.Sprintf(`{"path": %q}`, filepath.Join(outside, "secret.txt"))
	dialArgs := fmt.Sprintf(`{"addr": %q}`, ln.Addr().String())
	if confine.Available() == 0 {
		r := e.agenthost(t, "plugins", "list")
		if !strings.Contains(r.stderr, `mcp server "confined" runs unconfined: this kernel has no Landlock`) {
			t.Fatalf("no warning without Landlock: %s", r.stderr)
		}
		return
	}
	if r := e.agenthost(t, "plugins", "list"); !strings.Contains(r.stdout, "confined  mcp server (confined: Landlock)") || !strings.Contains(r.stdout, "free      mcp server (NOT SANDBOXED)") {
		t.Fatalf("plugins list:\n%s", r.stdout)
	}
	if got := call("confined", "read", okArgs); got != "inside" {
		t.Fatalf("confined read of its own file: %q", got)
	}
	if got := call("confined", "read", secretArgs); !strings.Contains(got, "permission denied") {
		t.Fatalf("confined read outside its list: %q", got)
	}
	if got := call("confined", "dial", dialArgs); !strings.Contains(got, "permission denied") {
		t.Fatalf("confined dial with net = false: %q", got)
	}
	if got := call("free", "read", secretArgs); got != "outside" {
		t.Fatalf("unconfined read: %q", got)
	}
	if got := call("free", "dial", dialArgs); got != "connected" {
		t.Fatalf("unconfined dial: %q", got)
	}
}
