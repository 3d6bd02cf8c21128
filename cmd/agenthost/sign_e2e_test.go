package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/agenthost/agenthost/ociplugin"
	"github.com/agenthost/agenthost/ociplugin/keyless"
	"github.com/agenthost/agenthost/ociplugin/sigstoretest"
)

// releaseSigner and releaseIssuer are the identity a release is signed as in these tests
// (a CI workflow's, in a real release) and its OIDC issuer.
const releaseSigner, releaseIssuer = "https://ci.example.com/agenthost/release.yml@refs/tags/v1", "https://token.example.com"

// checkSignedRelease signs dir's SHA256SUMS keylessly, offline (a virtual Sigstore in the
// test: a Fulcio CA certifying the CI identity, a Rekor log entry and a timestamp, the
// bundle `cosign sign-blob --bundle` writes), then `agenthost verify` accepts it with the
// archive and the SBOM, printing what it checked; and refuses, naming why: another
// identity, a bundle from another Fulcio, a tampered archive (SHA256SUMS lists another
// sha256), a SHA256SUMS rewritten to list the tampered archive (the signature no longer
// verifies), an archive SHA256SUMS does not list.
func checkSignedRelease(t *testing.T, dir string, files ...string) {
	t.Helper()
	e := &agentEnv{dir: t.TempDir(), manifest: "agent.toml"} // verify reads no manifest
	ca, err := sigstoretest.New()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(e.dir, "trusted_root.json")
	if err := ca.WriteTrustedRoot(root); err != nil {
		t.Fatal(err)
	}
	sumsPath := filepath.Join(dir, "SHA256SUMS")
	sums := must(os.ReadFile(sumsPath))
	sign := func(blob []byte, o sigstoretest.Options) string {
		b, err := ca.MessageBundle(releaseSigner, releaseIssuer, blob, o)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "SHA256SUMS.sigstore.json")
		os.WriteFile(p, b, 0o644)
		return p
	}
	bundle := sign(sums, sigstoretest.Options{})
	verify := func(sums, bundle, identity string, files ...string) result {
		return e.agenthost(t, append([]string{"verify", sums, "--bundle", bundle, "--trusted-root", root,
			"--identity", identity, "--issuer", releaseIssuer}, files...)...)
	}
	var paths []string
	for _, f := range files {
		paths = append(paths, filepath.Join(dir, f))
	}
	r := verify(sumsPath, bundle, releaseSigner, paths...)
	if r.code != 0 || !strings.Contains(r.stdout, sumsPath+`: signed by "`+releaseSigner+`" (issuer `+releaseIssuer+")") {
		t.Fatalf("verify the release: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, p := range paths {
		sum := sha256.Sum256(must(os.ReadFile(p)))
		if want := p + ": sha256 " + hex.EncodeToString(sum[:]) + ", as " + sumsPath + " lists"; !strings.Contains(r.stdout, want) {
			t.Errorf("verify says\n%s\nwant a line %q", r.stdout, want)
		}
	}

	other, err := sigstoretest.New()
	if err != nil {
		t.Fatal(err)
	}
	tampered := filepath.Join(t.TempDir(), files[0])
	raw := must(os.ReadFile(paths[0]))
	raw[len(raw)/2] ^= 1
	os.WriteFile(tampered, raw, 0o644)
	sum := sha256.Sum256(raw)
	forged := filepath.Join(filepath.Dir(tampered), "SHA256SUMS")
	os.WriteFile(forged, []byte(hex.EncodeToString(sum[:])+"  "+files[0]+"\n"), 0o644)
	stray := filepath.Join(t.TempDir(), "agenthost_v9_plan9_mips.tar.gz")
	os.WriteFile(stray, []byte("not released"), 0o644)
	for _, c := range []struct {
		name                         string
		sums, bundle, identity, file string
		want                         string
	}{
		{"another identity", sumsPath, bundle, "someone@example.com", paths[0], `does not verify for identity "someone@example.com"`},
		{"another Fulcio", sumsPath, sign(sums, sigstoretest.Options{CertFrom: other}), releaseSigner, paths[0], "does not verify"},
		{"tampered archive", sumsPath, bundle, releaseSigner, tampered, "but the signed " + sumsPath + " lists"},
		{"SHA256SUMS rewritten", forged, bundle, releaseSigner, tampered, "does not verify"},
		{"not listed", sumsPath, bundle, releaseSigner, stray, "does not list it"},
	} {
		r := verify(c.sums, c.bundle, c.identity, c.file)
		if r.code != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: verify %d\n%s%s\nwant exit 1 and %q", c.name, r.code, r.stdout, r.stderr, c.want)
		}
		if c.name == "tampered archive" && bytes.Contains([]byte(r.stdout), []byte(tampered+": sha256")) {
			t.Errorf("%s: verify printed the tampered archive as listed:\n%s", c.name, r.stdout)
		}
	}
}

// checkSignedImage pushes the image tag (podman's) to a registry on loopback, signs its
// manifest as `cosign sign` does (a DSSE statement of cosign's sign predicate about the
// manifest digest, from the virtual Sigstore, stored as a referrer of the manifest), and
// `agenthost verify oci://…` accepts it for the signer, printing the digest it verified;
// it refuses another identity, and the tag once it names an altered image (an annotation
// added: another manifest, which no bundle refers to).
func checkSignedImage(t *testing.T, tag string) {
	t.Helper()
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true)))
	defer reg.Close()
	dst := strings.TrimPrefix(reg.URL, "http://") + "/agenthost:test"
	if out, err := podman("push", "-q", "--tls-verify=false", tag, dst); err != nil {
		t.Fatalf("podman push: %v\n%s", err, out)
	}
	ref := "oci://" + dst
	r, err := ociplugin.ParseRef(ref)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(r)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := sigstoretest.New()
	if err != nil {
		t.Fatal(err)
	}
	e := &agentEnv{dir: t.TempDir(), manifest: "agent.toml"}
	root := filepath.Join(e.dir, "trusted_root.json")
	if err := ca.WriteTrustedRoot(root); err != nil {
		t.Fatal(err)
	}
	b, err := ca.StatementBundle(releaseSigner, releaseIssuer, keyless.SignPredicate, desc.Digest.Hex, sigstoretest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keyless.AttachBundle(ref, b); err != nil {
		t.Fatal(err)
	}
	verify := func(identity string) result {
		return e.agenthost(t, "verify", ref, "--trusted-root", root, "--identity", identity, "--issuer", releaseIssuer)
	}
	if res := verify(releaseSigner); res.code != 0 || !strings.Contains(res.stdout, ": "+desc.Digest.String()) {
		t.Fatalf("verify the image: %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if res := verify("someone@example.com"); res.code != 1 || !strings.Contains(res.stderr, `for identity "someone@example.com"`) {
		t.Fatalf("another identity: %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	img, err := remote.Image(r)
	if err != nil {
		t.Fatal(err)
	}
	altered := mutate.Annotations(img, map[string]string{"altered": "yes"}).(v1.Image)
	if err := remote.Write(r, altered); err != nil {
		t.Fatal(err)
	}
	if res := verify(releaseSigner); res.code != 1 || !strings.Contains(res.stderr, "no Sigstore bundle") {
		t.Fatalf("the altered image: %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}
