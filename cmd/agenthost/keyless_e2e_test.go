package main

import (
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/ociplugin/sigstoretest"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Keyless signatures through the binary, offline: a virtual Sigstore (Fulcio, Rekor and a
// timestamp authority in the test) signs the artifact's manifest as a CI identity, `plugins
// push --bundle` attaches the bundle, and an agent whose plugin says verify = { identity,
// issuer, trusted_root } runs it. The same plugin is refused at load, naming the entry and
// why, when it is unsigned, when the policy names another identity, and when its bundle has
// no transparency-log entry (unless the policy says tlog = false); a bundle of another
// artifact is not attached.
func TestE2E_KeylessSignedPluginFromAnOCIRegistry(t *testing.T) {
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	e := newEnv(t, "", "", [2]string{"scripted", `{"per_session": false, "repeat": true, "turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]},
	  {"text": "it is {{result c1}}"}]}`})
	ca, err := sigstoretest.New()
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.WriteTrustedRoot(filepath.Join(e.dir, "trusted_root.json")); err != nil {
		t.Fatal(err)
	}
	const signer, issuer = "ci@example.com", "https://token.example.com"
	// push prints the manifest digest; the signer signs the manifest (as `cosign sign-blob`
	// of it would); push again with --bundle attaches the bundle (the push itself changes
	// nothing: same bytes, same digest).
	pushSigned := func(wasm, tag string, o sigstoretest.Options) {
		ref := "oci://" + host + "/plugins/" + tag
		if r := e.agenthost(t, "plugins", "push", wasm, ref); r.code != 0 {
			t.Fatalf("push %s: %d %s", tag, r.code, r.stderr)
		}
		r, err := name.ParseReference(host+"/plugins/"+tag, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		desc, err := remote.Get(r)
		if err != nil {
			t.Fatal(err)
		}
		b, err := ca.MessageBundle(signer, issuer, desc.Manifest, o)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(e.dir, strings.ReplaceAll(tag, ":", "-")+".sigstore.json")
		os.WriteFile(file, b, 0o644)
		if r := e.agenthost(t, "plugins", "push", wasm, ref, "--bundle", file); r.code != 0 || strings.TrimSpace(r.stdout) != desc.Digest.String() {
			t.Fatalf("push --bundle %s: %d %s %s", tag, r.code, r.stdout, r.stderr)
		}
	}
	pushSigned(calcWasm, "calc:1.0", sigstoretest.Options{})
	other := filepath.Join(e.dir, "other.wasm")
	os.WriteFile(other, append(must(os.ReadFile(calcWasm)), 0, 6, 4, 'p', 'a', 'd', 'x', 1), 0o644) // a custom section: another digest, still a module
	pushSigned(other, "calc:nolog", sigstoretest.Options{NoTlog: true})
	unsigned := filepath.Join(e.dir, "unsigned.wasm") // a third digest: a signature is the digest's, whatever the tag
	os.WriteFile(unsigned, append(must(os.ReadFile(calcWasm)), 0, 6, 4, 'p', 'a', 'd', 'x', 2), 0o644)
	if r := e.agenthost(t, "plugins", "push", unsigned, "oci://"+host+"/plugins/calc:unsigned"); r.code != 0 {
		t.Fatalf("push unsigned: %d %s", r.code, r.stderr)
	}
	// A bundle of calc:1.0's manifest is not attached to another artifact.
	if r := e.agenthost(t, "plugins", "push", other, "oci://"+host+"/plugins/calc:mismatch", "--bundle", filepath.Join(e.dir, "calc-1.0.sigstore.json")); r.code != 1 || !strings.Contains(r.stderr, "not the artifact's manifest") {
		t.Fatalf("push --bundle of another artifact's bundle: %d %s", r.code, r.stderr)
	}

	orig := string(must(os.ReadFile(e.manifest)))
	use := func(tag, verify string) {
		m := strings.Replace(orig, `wasm = "`+calcWasm+`"`, `wasm = "oci://`+host+`/plugins/`+tag+`"`+"\nverify = { "+verify+" }", 1)
		if m == orig {
			t.Fatal("the manifest edit did not apply")
		}
		os.WriteFile(e.manifest, []byte(m), 0o644)
	}
	policy := `identity = "` + signer + `", issuer = "` + issuer + `", trusted_root = "trusted_root.json"`
	for _, ok := range []struct{ tag, verify string }{
		{"calc:1.0", policy},
		{"calc:1.0", `identity_regexp = ".*@example\\.com", issuer = "` + issuer + `", trusted_root = "trusted_root.json"`},
		{"calc:nolog", policy + `, tlog = false`},
	} {
		use(ok.tag, ok.verify)
		if r := e.agenthost(t, "run", "what is 6*7?"); r.code != 0 || !strings.Contains(r.stdout, "it is 42") {
			t.Fatalf("%s with %s: %d %s %s", ok.tag, ok.verify, r.code, r.stdout, r.stderr)
		}
	}
	for _, c := range []struct{ tag, verify, want string }{
		{"calc:unsigned", policy, "no signature"},
		{"calc:1.0", strings.Replace(policy, signer, "someone@example.com", 1), `expected SAN value "someone@example.com", got "ci@example.com"`},
		{"calc:nolog", policy, "transparency log"},
		{"calc:1.0", `identity = "` + signer + `", trusted_root = "trusted_root.json"`, "needs issuer"},
		{"calc:1.0", `key = "cosign.pub", ` + policy, "not both"},
	} {
		use(c.tag, c.verify)
		if r := e.agenthost(t, "run", "what is 6*7?"); r.code != 2 || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "plugins[0]") {
			t.Errorf("%s with %s: exit %d, stderr %s (want %q)", c.tag, c.verify, r.code, r.stderr, c.want)
		}
	}
}
