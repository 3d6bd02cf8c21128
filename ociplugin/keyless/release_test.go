package keyless

import (
	"errors"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/ociplugin"
	"github.com/agenthost/agenthost/ociplugin/sigstoretest"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// A release's image, signed as `cosign sign` signs one (a DSSE statement of cosign's sign
// predicate about its manifest digest, stored as a referrer), verifies for the signer and
// gives the digest verified; it does not for another identity; an image no bundle refers
// to is unsigned, and so is the tag once moved to such an image, though the signed image
// is still in the registry.
func TestVerifyImageChecksTheBundlesReferringToItsManifest(t *testing.T) {
	f := newKeylessFixture(t, true)
	ref := "oci://" + f.host + "/agenthost:v1"
	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := ociplugin.ParseRef(ref)
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	b := mustBundle(t)(f.ca.StatementBundle(signer, issuer, SignPredicate, d.Hex, sigstoretest.Options{}))
	if _, err := AttachBundle(ref, b); err != nil {
		t.Fatal(err)
	}
	if got, err := VerifyImage(*f.policy(), ref); err != nil || got != d.String() {
		t.Fatalf("VerifyImage: %q %v, want %s", got, err, d)
	}
	other := f.policy()
	other.Identity = "someone@example.com"
	if _, err := VerifyImage(*other, ref); err == nil || !strings.Contains(err.Error(), `for identity "someone@example.com"`) {
		t.Fatalf("another identity: %v", err)
	}
	unsigned, _ := random.Image(1024, 1)
	if err := remote.Write(r, unsigned); err != nil { // the tag moves
		t.Fatal(err)
	}
	if _, err := VerifyImage(*f.policy(), ref); !errors.Is(err, ociplugin.ErrUnsigned) {
		t.Fatalf("the tag on an unsigned image: %v, want ErrUnsigned", err)
	}
	if _, err := VerifyImage(*f.policy(), "oci://"+f.host+"/agenthost@"+d.String()); err != nil {
		t.Fatalf("the signed image by its digest: %v", err)
	}
}

// VerifyBlob accepts the bundle of a message signature over exactly these bytes, for the
// policy's identity; not over other bytes, not for another issuer, not from a Fulcio the
// trusted root does not hold; a policy missing its issuer is refused before anything.
func TestVerifyBlobChecksTheSignatureOverTheseBytes(t *testing.T) {
	f := newKeylessFixture(t, true)
	blob := []byte("0123  agenthost_v1_linux_amd64.tar.gz\n")
	b := mustBundle(t)(f.ca.MessageBundle(signer, issuer, blob, sigstoretest.Options{}))
	if err := VerifyBlob(*f.policy(), blob, b); err != nil {
		t.Fatal(err)
	}
	if err := VerifyBlob(*f.policy(), append(blob, ' '), b); err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Fatalf("other bytes: %v", err)
	}
	p := f.policy()
	p.Issuer = "https://other.example.com"
	if err := VerifyBlob(*p, blob, b); err == nil {
		t.Fatal("another issuer verified")
	}
	other, err := sigstoretest.New()
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyBlob(*f.policy(), blob, mustBundle(t)(f.ca.MessageBundle(signer, issuer, blob, sigstoretest.Options{CertFrom: other}))); err == nil {
		t.Fatal("a certificate from another Fulcio verified")
	}
	if err := VerifyBlob(*f.policy(), blob, []byte("{}")); err == nil || !strings.Contains(err.Error(), "not a Sigstore bundle") {
		t.Fatalf("not a bundle: %v", err)
	}
	p = f.policy()
	p.Issuer = ""
	if err := VerifyBlob(*p, blob, b); err == nil || !strings.Contains(err.Error(), "needs issuer") {
		t.Fatalf("no issuer: %v", err)
	}
}
