package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/confine"
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
confine = false
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
		if !strings.Contains(r.stderr, `mcp server "confined" is confined partly: this kernel does not enforce paths and ptrace (this kernel has no Landlock)`) {
			t.Fatalf("no warning without Landlock: %s", r.stderr)
		}
		return
	}
	if r := e.agenthost(t, "plugins", "list"); !strings.Contains(r.stdout, "confined  mcp server (confined)") || !strings.Contains(r.stdout, "free      mcp server (NOT SANDBOXED)") {
		t.Fatalf("plugins list:\n%s", r.stdout)
	}
	if got := call("confined", "read", okArgs); got != "inside" {
		t.Fatalf("confined read of its own file: %q", got)
	}
	if got := call("confined", "read", secretArgs); !strings.Contains(got, "permission denied") {
		t.Fatalf("confined read outside its list: %q", got)
	}
	if got := call("confined", "dial", dialArgs); !strings.Contains(got, "address family not supported") {
		t.Fatalf("confined dial with net = false: %q", got)
	}
	if got := call("free", "read", secretArgs); got != "outside" {
		t.Fatalf("unconfined read: %q", got)
	}
	if got := call("free", "dial", dialArgs); got != "connected" {
		t.Fatalf("unconfined dial: %q", got)
	}
}

// A provider adapter started with a sandbox reads what its read list names and nothing
// else (the scripted adapter reads files for {{read PATH}}), and the run still completes
// over the go-plugin connection with net = false and a sha256 pin (the pinned copy runs
// confined). The same adapter without a sandbox reads the other file. plugins list shows
// which is which; where the kernel has no Landlock the host says so instead.
func TestE2E_AConfinedProviderReadsOnlyItsReadList(t *testing.T) {
	inside, outside := t.TempDir(), t.TempDir() // before TMPDIR changes: t.TempDir's root is made once
	// The host's TMPDIR (pinned copies) and, passed by env, the confined adapter's (its
	// socket directory): short, as a socket's path must be.
	tmp, err := os.MkdirTemp("", "ah")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	t.Setenv("TMPDIR", tmp)
	okFile, secret := filepath.Join(inside, "ok.txt"), filepath.Join(outside, "secret.txt")
	os.WriteFile(okFile, []byte("inside"), 0o644)
	os.WriteFile(secret, []byte("outside"), 0o644)
	fixture := fmt.Sprintf(`{"repeat": true, "turns": [{"text": "ok={{read %s}} secret={{read %s}}"}]}`, okFile, secret)
	e := newEnv(t, "", "", [2]string{"confined", fixture}, [2]string{"free", fixture})
	adapter := filepath.Join(binDir, "agenthost-provider-scripted")
	m := string(must(os.ReadFile(e.manifest)))
	m = strings.Replace(m, "[providers.confined]\n", fmt.Sprintf("[providers.confined]\nenv = [\"TMPDIR\"]\nsha256 = %q\nsandbox = { read = [\"confined.json\", %q], net = false }\n",
		fileSHA(t, adapter), inside), 1)
	m = strings.Replace(m, "[providers.free]\n", "[providers.free]\nconfine = false\n", 1)
	os.WriteFile(e.manifest, []byte(m), 0o644)
	if confine.Available() == 0 {
		r := e.agenthost(t, "run", "go")
		if r.code != 0 || !strings.Contains(r.stderr, `provider "confined" is confined partly: this kernel does not enforce paths and ptrace (this kernel has no Landlock)`) {
			t.Fatalf("no warning without Landlock: %d %s", r.code, r.stderr)
		}
		return
	}
	list := e.agenthost(t, "plugins", "list")
	if !strings.Contains(list.stdout, "confined  provider (confined)       grpc") || !strings.Contains(list.stdout, "free      provider (NOT SANDBOXED)  grpc") {
		t.Fatalf("plugins list:\n%s", list.stdout)
	}
	var infos []struct {
		Name, Kind string
		Confined   *confine.Spec
	}
	if err := json.Unmarshal([]byte(e.agenthost(t, "plugins", "list", "--json").stdout), &infos); err != nil || len(infos) != 3 ||
		infos[1].Name != "confined" || infos[1].Kind != "provider" || infos[1].Confined == nil ||
		strings.Join(infos[1].Confined.Read, ",") != filepath.Join(e.dir, "confined.json")+","+inside || infos[2].Name != "free" || infos[2].Confined != nil {
		t.Fatalf("plugins list --json: %v %+v", err, infos)
	}
	r := e.agenthost(t, "run", "go")
	if want := "ok=inside secret=error: open " + secret + ": permission denied"; r.code != 0 || strings.TrimSpace(r.stdout) != want {
		t.Fatalf("confined run: exit %d\n%q\nwant %q\n%s", r.code, r.stdout, want, r.stderr)
	}
	if r := e.agenthost(t, "run", "--provider", "free", "go"); r.code != 0 || strings.TrimSpace(r.stdout) != "ok=inside secret=outside" {
		t.Fatalf("unconfined run: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	if left, err := os.ReadDir(tmp); err != nil || len(left) != 0 {
		t.Errorf("left behind in TMPDIR: %v %v", left, err)
	}
}
