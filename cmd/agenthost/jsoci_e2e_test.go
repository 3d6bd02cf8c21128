package main

import (
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/agenthost/agenthost/jsbundle"
	"github.com/agenthost/agenthost/ociplugin"
)

// ociplugin imports nothing of ours, so it knows a built bundle by its own copy of the
// header: the two must be one.
func TestOCIKnowsABuiltBundleByJSBundlesHeader(t *testing.T) {
	if ociplugin.JSBundleHeader != jsbundle.Header {
		t.Fatalf("ociplugin.JSBundleHeader %q, jsbundle.Header %q", ociplugin.JSBundleHeader, jsbundle.Header)
	}
}

// A built JS bundle is pushed, signed, pulled and verified like a module: its own layer
// media type, cached as <sha256>.js, run as it is by js = "oci://…". An unsigned one,
// a module where a bundle is wanted (and the reverse) and verify on a local file are
// refused at load.
func TestE2E_AJSBundleTravelsThroughAnOCIRegistrySigned(t *testing.T) {
	if err := jsRuntimeBeside(); err != nil {
		t.Fatal(err)
	}
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	work := t.TempDir()
	e := &agentEnv{dir: work, manifest: filepath.Join(work, "agent.toml")}
	signer, _ := writeKeys(t, work, "cosign")
	os.MkdirAll(filepath.Join(work, "lib"), 0o755)
	os.WriteFile(filepath.Join(work, "shout.ts"), []byte(builtToolTS), 0o644)
	os.WriteFile(filepath.Join(work, "lib", "shout.ts"), []byte("export const shout = (s: string): string => s.toUpperCase() + \"!\";\n"), 0o644)
	if r := e.agenthost(t, "plugins", "build", "shout.ts", "-o", "shout.js"); r.code != 0 {
		t.Fatalf("build: %d %s", r.code, r.stderr)
	}
	ref := "oci://" + host + "/plugins/shout:1"
	if r := e.agenthost(t, "plugins", "push", "shout.js", ref, "--sign-key", signer); r.code != 0 || !strings.HasPrefix(r.stdout, "sha256:") {
		t.Fatalf("push: %d %s %s", r.code, r.stdout, r.stderr)
	}
	unsigned := "oci://" + host + "/plugins/shout:unsigned"
	os.WriteFile(filepath.Join(work, "other.js"), append(must(os.ReadFile(filepath.Join(work, "shout.js"))), '\n'), 0o644)
	if r := e.agenthost(t, "plugins", "push", "other.js", unsigned); r.code != 0 {
		t.Fatalf("push unsigned: %d %s", r.code, r.stderr)
	}
	wasmRef := "oci://" + host + "/plugins/calc:1"
	if r := e.agenthost(t, "plugins", "push", calcWasm, wasmRef); r.code != 0 {
		t.Fatalf("push calc: %d %s", r.code, r.stderr)
	}
	if r := e.agenthost(t, "plugins", "pull", ref, "--key", "cosign.pub", "--dir", "pulled"); r.code != 0 || !strings.Contains(r.stdout, filepath.Join("pulled", fileSHA(t, filepath.Join(work, "shout.js"))+".js")) {
		t.Fatalf("pull: %d %s %s", r.code, r.stdout, r.stderr)
	}
	os.RemoveAll(filepath.Join(work, "lib")) // what runs is the pulled bundle alone
	os.Remove(filepath.Join(work, "shout.ts"))
	manifest := func(entry string) {
		os.WriteFile(e.manifest, []byte("[store]\nkind = \"memory\"\n[[plugins]]\nname = \"shout\"\n"+entry+"\n"), 0o644)
	}
	manifest(`js = "` + ref + `"` + "\nverify = { key = \"cosign.pub\" }")
	if r := e.agenthost(t, "plugins", "call", "shout", "shout", `{"text":"oci"}`); r.code != 0 || !strings.Contains(r.stdout, "OCI!") {
		t.Fatalf("call the pulled bundle: %d %s %s", r.code, r.stdout, r.stderr)
	}
	cached, _ := filepath.Glob(filepath.Join(work, ".agenthost", "oci", "*.js"))
	if len(cached) != 1 || fileSHA(t, cached[0]) != fileSHA(t, filepath.Join(work, "shout.js")) {
		t.Fatalf("cache: %v", cached)
	}
	if lock, err := os.ReadFile(filepath.Join(work, "agent.lock")); err != nil || !strings.Contains(string(lock), ref) || !strings.Contains(string(lock), "sha256:"+fileSHA(t, cached[0])) {
		t.Errorf("agent.lock (%v):\n%s", err, lock)
	}
	for _, c := range []struct{ entry, want string }{
		{`js = "` + unsigned + `"` + "\nverify = { key = \"cosign.pub\" }", "no signature"},
		{`js = "` + wasmRef + `"`, `layer media type "application/vnd.module.wasm.content.layer.v1+wasm", want application/vnd.agenthost.js.bundle.v1+javascript`},
		{`wasm = "` + ref + `"`, `layer media type "application/vnd.agenthost.js.bundle.v1+javascript", want application/vnd.module.wasm.content.layer.v1+wasm`},
		{`js = "shout.js"` + "\nverify = { key = \"cosign.pub\" }", `verify applies to plugins pulled from a registry (js = "oci://…")`},
	} {
		manifest(c.entry)
		os.Remove(filepath.Join(work, "agent.lock"))
		if r := e.agenthost(t, "plugins", "list"); r.code != 2 || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "plugins[0]") {
			t.Errorf("%s: exit %d, stderr %s (want %q)", c.entry, r.code, r.stderr, c.want)
		}
	}
}
