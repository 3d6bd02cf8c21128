package keyless

import (
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/agenthost/agenthost/ociplugin"
)

// VerifyBlob verifies that bundle (a Sigstore bundle, JSON: what `cosign sign-blob
// --bundle` writes) signs blob for policy k: its certificate chains to a Fulcio CA of k's
// trusted root and names k's identity and issuer, its transparency-log entry (or, with
// NoTlog, its signed timestamp) verifies, and its signature is over these bytes. A
// release's SHA256SUMS is verified so (agenthost verify).
func VerifyBlob(k ociplugin.Keyless, blob, bundle []byte) error {
	if err := k.Validate(); err != nil {
		return err
	}
	switch {
	case len(blob) > MaxBlob:
		return fmt.Errorf("a file of %d bytes: a signed file is at most %d (a release's checksums are a few hundred)", len(blob), MaxBlob)
	case len(bundle) > maxBundle:
		return fmt.Errorf("bundle larger than %d bytes", maxBundle)
	}
	res, err := call(HelperRequest{Op: OpVerify, Policy: k, Blob: blob, Bundles: [][]byte{bundle}})
	switch {
	case err != nil:
		return err
	case res.Error != "":
		return errors.New(res.Error)
	case res.Verified == nil:
		return fmt.Errorf("the bundle does not verify for identity %s, issuer %q: %s", k.Describe(), k.Issuer, res.Errors[0])
	}
	return nil
}

// MaxBlob bounds what VerifyBlob verifies: the file goes to the helper in its request.
const MaxBlob = 32 << 20

// VerifyImage verifies an image (or any OCI artifact) at ref (oci://REGISTRY/REPO:TAG or
// @sha256:…) as a keyless plugin is verified: one of the Sigstore bundles stored as
// referrers of its manifest (what `cosign sign` writes) must verify for k. It returns the
// manifest's digest, which is what was verified: pull by that digest.
func VerifyImage(k ociplugin.Keyless, ref string) (string, error) {
	if err := k.Validate(); err != nil {
		return "", err
	}
	c, err := newCheck(k)
	if err != nil {
		return "", err
	}
	r, err := ociplugin.ParseRef(ref)
	if err != nil {
		return "", err
	}
	desc, err := remote.Get(r, ociplugin.RemoteOptions()...)
	if err != nil {
		return "", fmt.Errorf("%s: %w", ref, err)
	}
	if err := c.verify(r, desc.Digest); err != nil {
		return "", err
	}
	return desc.Digest.String(), nil
}
