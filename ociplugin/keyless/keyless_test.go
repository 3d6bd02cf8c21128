package keyless

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/ociplugin"
	"github.com/agenthost/agenthost/ociplugin/sigstoretest"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

const (
	signer = "release@example.com"
	issuer = "https://issuer.example.com"
)

// keylessFixture is a registry on loopback, a virtual Sigstore whose trusted root is in a
// file, and a pushed module.
type keylessFixture struct {
	host, ref, root string
	ca              *sigstoretest.CA
	manifest        []byte
	digest          v1.Hash
}

func newKeylessFixture(t *testing.T, referrersAPI bool) *keylessFixture {
	t.Helper()
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(referrersAPI)))
	t.Cleanup(reg.Close)
	f := &keylessFixture{host: strings.TrimPrefix(reg.URL, "http://"), root: filepath.Join(t.TempDir(), "trusted_root.json")}
	f.ref = "oci://" + f.host + "/plugins/calc:1"
	var err error
	if f.ca, err = sigstoretest.New(); err != nil {
		t.Fatal(err)
	}
	if err := f.ca.WriteTrustedRoot(f.root); err != nil {
		t.Fatal(err)
	}
	f.manifest, f.digest = f.push(t, f.ref, []byte("\x00asm\x01\x00\x00\x00"))
	return f
}

// push pushes module at ref and returns its manifest's bytes and digest.
func (f *keylessFixture) push(t *testing.T, ref string, module []byte) ([]byte, v1.Hash) {
	t.Helper()
	if _, err := ociplugin.Push(module, ref, ""); err != nil {
		t.Fatal(err)
	}
	r, _ := ociplugin.ParseRef(ref)
	desc, err := remote.Get(r)
	if err != nil {
		t.Fatal(err)
	}
	return desc.Manifest, desc.Digest
}

func (f *keylessFixture) policy() *ociplugin.Keyless {
	return &ociplugin.Keyless{Identity: signer, Issuer: issuer, TrustedRoot: f.root}
}

func (f *keylessFixture) pull(t *testing.T, ref string, k *ociplugin.Keyless) error {
	t.Helper()
	_, err := ociplugin.PullWith(ref, ociplugin.PullOptions{Cache: filepath.Join(t.TempDir(), "oci"), Keyless: k})
	return err
}

func mustBundle(t *testing.T) func([]byte, error) []byte {
	return func(b []byte, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

// A bundle made by the trusted identity over the artifact's manifest, attached as a
// referrer (by the referrers API, or the sha256-<digest> tag index where the registry
// has none), lets the artifact through: as a message signature (cosign sign-blob of the
// manifest) and as a DSSE statement of cosign's sign predicate (cosign sign), with the
// identity given exactly or as a regexp.
func TestKeylessBundleOfTheTrustedIdentityIsAccepted(t *testing.T) {
	for _, api := range []bool{true, false} {
		f := newKeylessFixture(t, api)
		must := mustBundle(t)
		if _, err := AttachBundle(f.ref, must(f.ca.MessageBundle(signer, issuer, f.manifest, sigstoretest.Options{}))); err != nil {
			t.Fatal(err)
		}
		if err := f.pull(t, f.ref, f.policy()); err != nil {
			t.Fatalf("referrers API %v, message signature: %v", api, err)
		}
		if err := f.pull(t, f.ref, &ociplugin.Keyless{IdentityRegexp: `.*@example\.com`, Issuer: issuer, TrustedRoot: f.root}); err != nil {
			t.Fatalf("referrers API %v, identity_regexp: %v", api, err)
		}
		ref2 := "oci://" + f.host + "/plugins/calc:2"
		_, d2 := f.push(t, ref2, []byte("\x00asm\x01\x00\x00\x00\x00"))
		if _, err := AttachBundle(ref2, must(f.ca.StatementBundle(signer, issuer, SignPredicate, d2.Hex, sigstoretest.Options{}))); err != nil {
			t.Fatal(err)
		}
		if err := f.pull(t, ref2, f.policy()); err != nil {
			t.Fatalf("referrers API %v, DSSE statement: %v", api, err)
		}
	}
}

// Each way a keyless signature can be wrong is refused, naming why: none at all, another
// identity or issuer, a regexp that matches only part of the identity, a certificate from a
// CA the trusted root does not hold, a bundle copied from another artifact (what tampering
// with the artifact amounts to: its digest changes), one without its transparency-log
// entry, and an attestation that is not a signature.
func TestKeylessBundleThatDoesNotVerifyIsRefused(t *testing.T) {
	f := newKeylessFixture(t, true)
	must := mustBundle(t)
	if err := f.pull(t, f.ref, f.policy()); !errors.Is(err, ociplugin.ErrUnsigned) || !strings.Contains(err.Error(), "no Sigstore bundle") {
		t.Fatalf("unsigned: %v", err)
	}
	other, err := sigstoretest.New()
	if err != nil {
		t.Fatal(err)
	}
	otherManifest, _ := f.push(t, "oci://"+f.host+"/plugins/calc:other", []byte("\x00asm\x01\x00\x00\x00\x01"))
	for i, c := range []struct {
		name   string
		bundle []byte
		policy *ociplugin.Keyless
		want   string
	}{
		{"another identity", must(f.ca.MessageBundle("intruder@example.com", issuer, f.manifest, sigstoretest.Options{})), f.policy(), `expected SAN value "release@example.com", got "intruder@example.com"`},
		{"another issuer", must(f.ca.MessageBundle(signer, "https://evil.example.com", f.manifest, sigstoretest.Options{})), f.policy(), "https://evil.example.com"},
		{"a regexp matching a part", must(f.ca.MessageBundle("release@example.com.evil.org", issuer, f.manifest, sigstoretest.Options{})),
			&ociplugin.Keyless{IdentityRegexp: `release@example\.com`, Issuer: issuer, TrustedRoot: f.root}, "release@example.com.evil.org"},
		{"another CA", must(f.ca.MessageBundle(signer, issuer, f.manifest, sigstoretest.Options{CertFrom: other})), f.policy(), "leaf certificate verification failed"},
		{"another artifact's bundle", must(f.ca.MessageBundle(signer, issuer, otherManifest, sigstoretest.Options{})), f.policy(), "digest"},
		{"a tampered signature", tamper(t, must(f.ca.MessageBundle(signer, issuer, f.manifest, sigstoretest.Options{}))), f.policy(), "signature does not match"},
		{"no log entry", must(f.ca.MessageBundle(signer, issuer, f.manifest, sigstoretest.Options{NoTlog: true})), f.policy(), "transparency log"},
		{"no log entry nor timestamp, tlog = false", must(f.ca.MessageBundle(signer, issuer, f.manifest, sigstoretest.Options{NoTlog: true, NoTimestamp: true})),
			&ociplugin.Keyless{Identity: signer, Issuer: issuer, TrustedRoot: f.root, NoTlog: true}, "timestamp"},
		{"an attestation", must(f.ca.StatementBundle(signer, issuer, "https://slsa.dev/provenance/v1", f.digest.Hex, sigstoretest.Options{})), f.policy(), `an attestation of type "https://slsa.dev/provenance/v1"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Each case in its own repository, holding the same module (so the same
			// manifest digest): referrers are per repository.
			ref := "oci://" + f.host + "/plugins/case" + strconv.Itoa(i) + ":1"
			f.push(t, ref, []byte("\x00asm\x01\x00\x00\x00"))
			r, _ := ociplugin.ParseRef(ref)
			desc, err := remote.Get(r)
			if err != nil || desc.Digest != f.digest {
				t.Fatal(desc.Digest, err)
			}
			content := "message-signature"
			if strings.Contains(c.name, "attestation") {
				content = "dsse-envelope"
			}
			// Attached as a registry could hold it, past AttachBundle's own check.
			if _, err := attach(r.Context(), desc.Descriptor, c.bundle, content); err != nil {
				t.Fatal(err)
			}
			err = f.pull(t, ref, c.policy)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "no Sigstore bundle of "+f.digest.String()+" verifies") {
				t.Fatalf("err %v, want %q", err, c.want)
			}
			t.Log(err)
		})
	}
}

// With tlog = false a bundle without a log entry passes on its timestamp authority's
// timestamp (the signing time inside the certificate's ten minutes).
func TestKeylessWithoutTlogAcceptsATimestampedBundle(t *testing.T) {
	f := newKeylessFixture(t, true)
	if _, err := AttachBundle(f.ref, mustBundle(t)(f.ca.MessageBundle(signer, issuer, f.manifest, sigstoretest.Options{NoTlog: true}))); err != nil {
		t.Fatal(err)
	}
	k := f.policy()
	if err := f.pull(t, f.ref, k); err == nil {
		t.Fatal("a bundle without a log entry passed the default policy")
	}
	k.NoTlog = true
	if err := f.pull(t, f.ref, k); err != nil {
		t.Fatal(err)
	}
}

// A policy missing a part, or with both forms of identity, or a bad regexp, or a key with
// it, is refused before the registry is asked anything; a trusted root that is not one is
// named.
func TestKeylessPolicyIsCheckedFirst(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root.json")
	os.WriteFile(root, []byte(`{"mediaType": "nonsense"}`), 0o644)
	for _, c := range []struct {
		k    ociplugin.Keyless
		want string
	}{
		{ociplugin.Keyless{Issuer: issuer, TrustedRoot: root}, "needs identity"},
		{ociplugin.Keyless{Identity: "a", IdentityRegexp: "b", Issuer: issuer, TrustedRoot: root}, "exclude each other"},
		{ociplugin.Keyless{IdentityRegexp: "(", Issuer: issuer, TrustedRoot: root}, "identity_regexp: error parsing regexp"},
		{ociplugin.Keyless{Identity: signer, TrustedRoot: root}, "needs issuer"},
		{ociplugin.Keyless{Identity: signer, Issuer: issuer}, "needs trusted_root"},
		{ociplugin.Keyless{Identity: signer, Issuer: issuer, TrustedRoot: root}, "trusted root " + root},
		{ociplugin.Keyless{Identity: signer, Issuer: issuer, TrustedRoot: root + ".missing"}, "no such file"},
	} {
		_, err := ociplugin.PullWith("oci://127.0.0.1:1/p/x:1", ociplugin.PullOptions{Keyless: &c.k})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.k, err, c.want)
		}
	}
	_, err := ociplugin.PullWith("oci://127.0.0.1:1/p/x:1", ociplugin.PullOptions{Key: "k.pub", Keyless: &ociplugin.Keyless{}})
	if err == nil || !strings.Contains(err.Error(), "exclude each other") {
		t.Errorf("key and keyless: %v", err)
	}
}

// AttachBundle stores only a Sigstore bundle about the artifact it is attached to.
func TestAttachBundleRefusesABundleOfAnotherArtifact(t *testing.T) {
	f := newKeylessFixture(t, false)
	must := mustBundle(t)
	for _, c := range []struct {
		bundle []byte
		want   string
	}{
		{[]byte(`{"hello": 1}`), "not a Sigstore bundle"},
		{must(f.ca.MessageBundle(signer, issuer, []byte("something else"), sigstoretest.Options{})), "not the artifact's manifest " + f.digest.String()},
		{must(f.ca.StatementBundle(signer, issuer, SignPredicate, strings.Repeat("ab", 32), sigstoretest.Options{})), "does not name the artifact's manifest"},
	} {
		if _, err := AttachBundle(f.ref, c.bundle); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
	if err := f.pull(t, f.ref, f.policy()); !errors.Is(err, ociplugin.ErrUnsigned) {
		t.Fatalf("a refused bundle was attached: %v", err)
	}
}

// What a hostile registry holds as bundles — not JSON, not a bundle, more than 1 MiB — is
// each refused with its reason, and the artifact with them.
func TestKeylessHostileBundlesAreRefusedWithTheirReasons(t *testing.T) {
	f := newKeylessFixture(t, true)
	r, _ := ociplugin.ParseRef(f.ref)
	desc, err := remote.Get(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{[]byte("\xff\xfe not json"), []byte(`{"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json"}`), make([]byte, maxBundle+1)} {
		if _, err := attach(r.Context(), desc.Descriptor, b, "message-signature"); err != nil {
			t.Fatal(err)
		}
	}
	err = f.pull(t, f.ref, f.policy())
	if err == nil || strings.Count(err.Error(), "not a Sigstore bundle") != 2 || !strings.Contains(err.Error(), "bundle larger than 1048576 bytes") {
		t.Fatalf("%v", err)
	}
}

// tamper flips a bit of a message-signature bundle's signature.
func tamper(t *testing.T, raw []byte) []byte {
	t.Helper()
	var b map[string]any
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatal(err)
	}
	ms := b["messageSignature"].(map[string]any)
	sig, _ := base64.StdEncoding.DecodeString(ms["signature"].(string))
	sig[len(sig)/2] ^= 1
	ms["signature"] = base64.StdEncoding.EncodeToString(sig)
	out, _ := json.Marshal(b)
	return out
}
