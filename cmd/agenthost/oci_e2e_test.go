package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
)

func writeKeys(t *testing.T, dir, name string) (priv, pub string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pb, _ := x509.MarshalECPrivateKey(k)
	pubb, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	priv, pub = filepath.Join(dir, name+".key"), filepath.Join(dir, name+".pub")
	os.WriteFile(priv, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: pb}), 0o600)
	os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubb}), 0o644)
	return priv, pub
}

// Plugins from an OCI registry (an in-process one on loopback): pushed signed with
// `plugins push --sign-key`, referenced as oci://… with verify = { key }, they load and
// run like a local file. An unsigned artifact, one signed with another key, one that is
// not a plugin artifact, and a pin the registry's module does not match are refused at
// load, naming the plugin's key and why.
func TestE2E_PluginsFromAnOCIRegistry(t *testing.T) {
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	e := newEnv(t, "", "", [2]string{"scripted", `{"per_session": false, "repeat": true, "turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]},
	  {"text": "it is {{result c1}}"}]}`})
	signer, _ := writeKeys(t, e.dir, "cosign")
	_, otherPub := writeKeys(t, e.dir, "other")
	ref := "oci://" + host + "/plugins/calc:1.0"
	r := e.agenthost(t, "plugins", "push", calcWasm, ref, "--sign-key", signer)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "sha256:") {
		t.Fatalf("push: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// Another module (the same bytes would share calc:1.0's digest, and so its signature).
	other := filepath.Join(e.dir, "other.wasm")
	os.WriteFile(other, append(must(os.ReadFile(calcWasm)), 0, 0, 0, 0), 0o644) // a trailing custom-section-free pad changes the digest
	if r := e.agenthost(t, "plugins", "push", other, "oci://"+host+"/plugins/calc:unsigned"); r.code != 0 {
		t.Fatalf("push unsigned: %d %s", r.code, r.stderr)
	}
	if r := e.agenthost(t, "plugins", "push", filepath.Join(e.dir, "scripted.json"), "oci://"+host+"/plugins/notwasm:1"); r.code != 1 || !strings.Contains(r.stderr, "not a WebAssembly module") {
		t.Fatalf("push of a non-module: %d %s", r.code, r.stderr)
	}
	// An artifact that is not a plugin's: pushed by another tool, with a text layer.
	notPlugin, _ := name.ParseReference(host+"/plugins/notwasm:1", name.Insecure)
	img, _ := mutate.AppendLayers(empty.Image, static.NewLayer([]byte("hello"), "text/plain"))
	if err := remote.Write(notPlugin, img); err != nil {
		t.Fatal(err)
	}
	orig := string(must(os.ReadFile(e.manifest)))
	use := func(wasm, extra string) {
		m := strings.Replace(orig, `wasm = "`+calcWasm+`"`, `wasm = "`+wasm+`"`+"\n"+extra, 1)
		if m == orig {
			t.Fatal("the manifest edit did not apply")
		}
		os.WriteFile(e.manifest, []byte(m), 0o644)
	}
	use(ref, `verify = { key = "cosign.pub" }`)
	r = e.agenthost(t, "run", "what is 6*7?")
	if r.code != 0 || !strings.Contains(r.stdout, "it is 42") {
		t.Fatalf("run with the pulled plugin: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// Its compile note names it and its reference, not its cached blob (a digest).
	if strings.Contains(r.stderr, "compiling ") && !strings.Contains(r.stderr, "compiling calc ("+ref+") (first run") {
		t.Fatalf("compile note: %s", r.stderr)
	}
	cached, _ := filepath.Glob(filepath.Join(e.dir, ".agenthost", "oci", "*.wasm"))
	if len(cached) != 1 || fileSHA(t, cached[0])+".wasm" != filepath.Base(cached[0]) || fileSHA(t, cached[0]) != fileSHA(t, calcWasm) {
		t.Fatalf("cache: %v", cached)
	}
	for _, c := range []struct{ wasm, extra, want string }{
		{"oci://" + host + "/plugins/calc:unsigned", `verify = { key = "cosign.pub" }`, "no signature"},
		{ref, `verify = { key = "` + filepath.Base(otherPub) + `" }`, "does not verify with"}, // inside the manifest's directory
		{"oci://" + host + "/plugins/notwasm:1", "", "layer media type"},
		{ref, `sha256 = "` + strings.Repeat("0", 64) + `"`, "digest mismatch"},
		{"oci://" + host + "/plugins/missing:1", "", "plugins/missing:1"},
	} {
		use(c.wasm, c.extra)
		if r := e.agenthost(t, "plugins", "list"); r.code != 2 || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "plugins[0]") {
			t.Errorf("%s %s: exit %d, stderr %s (want %q)", c.wasm, c.extra, r.code, r.stderr, c.want)
		}
	}
}
