package main

import (
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// agent.lock beside agent.toml records what each oci:// plugin resolved to. The first
// load writes it; --locked refuses a tag that now names another module, and a reference
// the lock lacks, naming the plugin, the reference and both digests, before the module
// is fetched and without writing the lock; without --locked a moved tag is followed, with
// a warning, and the lock updated; a local plugin pinned by sha256 is not recorded.
func TestE2E_AgentLockAndLocked(t *testing.T) {
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	regHost := strings.TrimPrefix(reg.URL, "http://")
	e := newEnv(t, "", "", [2]string{"scripted", `{"per_session": false, "repeat": true, "turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]},
	  {"text": "it is {{result c1}}"}]}`})
	push := func(file, ref string) string {
		t.Helper()
		r := e.agenthost(t, "plugins", "push", file, ref)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "sha256:") {
			t.Fatalf("push %s: %d %s %s", ref, r.code, r.stdout, r.stderr)
		}
		return strings.TrimSpace(r.stdout)
	}
	orig := string(must(os.ReadFile(e.manifest)))
	use := func(wasm, extra string) {
		t.Helper()
		m := strings.Replace(orig, `wasm = "`+calcWasm+`"`, `wasm = "`+wasm+`"`, 1) + extra
		if m == orig {
			t.Fatal("the manifest edit did not apply")
		}
		os.WriteFile(e.manifest, []byte(m), 0o644)
	}
	lockFile := filepath.Join(e.dir, "agent.lock")
	lockHolds := func(entries ...[3]string) {
		t.Helper()
		want := "# This file is written by agenthost: the digests the oci:// plugins of the manifest\n" +
			"# beside it resolved to. Commit it with the manifest; \"agenthost --locked …\" refuses a\n" +
			"# plugin that is not here or that resolves to other digests, and never writes this file.\nversion = 1\n"
		for _, en := range entries {
			want += fmt.Sprintf("\n[[plugin]]\nref = %q\nmanifest = %q\nmodule = %q\n", en[0], en[1], en[2])
		}
		if got := string(must(os.ReadFile(lockFile))); got != want {
			t.Fatalf("agent.lock:\n%s\nwant:\n%s", got, want)
		}
	}
	// unwritten fails the test if the lock file was replaced or changed since before.
	unwritten := func(before os.FileInfo, content string) {
		t.Helper()
		after, err := os.Stat(lockFile)
		if err != nil || !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) || string(must(os.ReadFile(lockFile))) != content {
			t.Fatalf("--locked wrote the lock: %v", err)
		}
	}
	runs := func(wantCode int, args ...string) result {
		t.Helper()
		r := e.agenthost(t, append(args, "run", "what is 6*7?")...)
		if r.code != wantCode || (wantCode == 0 && !strings.Contains(r.stdout, "it is 42")) {
			t.Fatalf("%v run: exit %d (want %d)\n%s\n%s", args, r.code, wantCode, r.stdout, r.stderr)
		}
		return r
	}

	ref := "oci://" + regHost + "/plugins/calc:1.0"
	firstManifest := push(calcWasm, ref)
	firstModule := "sha256:" + fileSHA(t, calcWasm)
	use(ref, "")

	// --locked before there is a lock: refused, and no lock is written.
	r := runs(2, "--locked")
	if want := fmt.Sprintf(`plugins[0].wasm: --locked: plugin "calc" (%s) is not in %s, which does not exist (it resolved to module %s (manifest %s)); run once without --locked to write it`,
		ref, lockFile, firstModule, firstManifest); !strings.Contains(r.stderr, want) {
		t.Fatalf("--locked without a lock:\n%s\nwant %s", r.stderr, want)
	}
	if _, err := os.Stat(lockFile); !os.IsNotExist(err) {
		t.Fatalf("--locked wrote a lock: %v", err)
	}

	// The first load writes it; --locked then runs and leaves it alone.
	runs(0)
	lockHolds([3]string{ref, firstManifest, firstModule})
	before, _ := os.Stat(lockFile)
	content := string(must(os.ReadFile(lockFile)))
	runs(0, "--locked")
	unwritten(before, content)

	// Another module re-pushed under the same tag (a valid custom section appended).
	other := filepath.Join(e.dir, "other.wasm")
	os.WriteFile(other, append(must(os.ReadFile(calcWasm)), 0x00, 0x06, 0x04, 'l', 'o', 'c', 'k', 0x01), 0o644)
	secondManifest := push(other, ref)
	secondModule := "sha256:" + fileSHA(t, other)
	refused := fmt.Sprintf(`--locked: plugin "calc" (%s) resolved to module %s (manifest %s), but %s has module %s (manifest %s); if the change is expected, run once without --locked to record it`,
		ref, secondModule, secondManifest, lockFile, firstModule, firstManifest)
	for _, args := range [][]string{{"--locked", "run", "what is 6*7?"}, {"--locked", "plugins", "list"}, {"mcp", "serve", "--locked"}} {
		if r := e.agenthost(t, args...); r.code != 2 || !strings.Contains(r.stderr, "plugins[0].wasm: "+refused) {
			t.Fatalf("%v after the tag moved: exit %d\n%s\nwant %s", args, r.code, r.stderr, refused)
		}
	}
	pullRefused := strings.Replace(refused, `plugin "calc" (`+ref+`)`, ref, 1)
	if r := e.agenthost(t, "--locked", "plugins", "pull", ref); r.code != 1 || !strings.Contains(r.stderr, pullRefused) {
		t.Fatalf("--locked plugins pull after the tag moved: exit %d\n%s\nwant %s", r.code, r.stderr, pullRefused)
	}
	unwritten(before, content)
	if _, err := os.Stat(filepath.Join(e.dir, ".agenthost", "oci", strings.TrimPrefix(secondModule, "sha256:")+".wasm")); !os.IsNotExist(err) {
		t.Fatalf("the refused module was fetched into the cache: %v", err)
	}

	// Without --locked the moved tag is followed, with a warning, and the lock updated.
	r = runs(0)
	if want := fmt.Sprintf(`agenthost: warning: plugin "calc" (%s) now resolves to module %s (manifest %s); %s had module %s (manifest %s) and is updated (--locked refuses such a change)`,
		ref, secondModule, secondManifest, lockFile, firstModule, firstManifest); !strings.Contains(r.stderr, want) {
		t.Fatalf("no warning of the moved tag:\n%s\nwant %s", r.stderr, want)
	}
	lockHolds([3]string{ref, secondManifest, secondModule})
	runs(0, "--locked")

	// A reference the lock lacks is refused under --locked, by run and by pull.
	ref2 := "oci://" + regHost + "/plugins/calc:2.0"
	push(calcWasm, ref2)
	use(ref2, "")
	before, _ = os.Stat(lockFile)
	content = string(must(os.ReadFile(lockFile)))
	missing := fmt.Sprintf(`--locked: plugin "calc" (%s) is not in %s (it resolved to module %s (manifest %s)); run once without --locked to record it`,
		ref2, lockFile, firstModule, firstManifest)
	if r := runs(2, "--locked"); !strings.Contains(r.stderr, "plugins[0].wasm: "+missing) {
		t.Fatalf("--locked with a reference the lock lacks:\n%s\nwant %s", r.stderr, missing)
	}
	if r := e.agenthost(t, "--locked", "plugins", "pull", ref2); r.code != 1 || !strings.Contains(r.stderr, strings.Replace(missing, `plugin "calc" (`+ref2+`)`, ref2, 1)) {
		t.Fatalf("--locked plugins pull of a reference the lock lacks: exit %d\n%s", r.code, r.stderr)
	}
	unwritten(before, content)

	// Without --locked it is recorded and the reference no longer used is dropped; a local
	// plugin pinned by sha256 is pinned in the manifest, not in the lock.
	use(ref2, fmt.Sprintf("\n[[plugins]]\nname = \"local\"\nwasm = %q\nsha256 = %q\n", calcWasm, fileSHA(t, calcWasm)))
	if r := e.agenthost(t, "plugins", "list"); r.code != 0 || !strings.Contains(r.stdout, "local") {
		t.Fatalf("plugins list: %d %s %s", r.code, r.stdout, r.stderr)
	}
	lockHolds([3]string{ref2, firstManifest, firstModule})
}
