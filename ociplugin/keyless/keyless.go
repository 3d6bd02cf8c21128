package keyless

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/agenthost/agenthost/ociplugin"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	sigverify "github.com/sigstore/sigstore-go/pkg/verify"
)

// Keyless signatures are Sigstore bundles (a Fulcio certificate for an OIDC identity, the
// signature, its transparency-log entry and timestamps) stored as OCI referrers of the
// artifact's manifest, the layout cosign 3 writes.
const (
	BundleType types.MediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	emptyType  types.MediaType = "application/vnd.oci.empty.v1+json"
	// SignPredicate is the in-toto predicate type of cosign's image signature: a DSSE
	// bundle with another predicate (a provenance, an SBOM) is an attestation, not a
	// signature, and is not taken as one.
	SignPredicate = "https://sigstore.dev/cosign/sign/v1"
	// maxBundle bounds a bundle read from a registry; maxBundles the referrers looked at.
	maxBundle  = 1 << 20
	maxBundles = 32
)

// keylessCheck is a Keyless policy made ready: its trusted root read, its verifier and
// certificate identity built (before the registry is asked anything).
type keylessCheck struct {
	k  ociplugin.Keyless
	v  *sigverify.Verifier
	id sigverify.CertificateIdentity
}

func init() { ociplugin.RegisterKeyless(prepare) }

// prepare reads the policy's trusted root and builds its verifier and certificate
// identity; the policy was validated by ociplugin.
func prepare(k ociplugin.Keyless) (ociplugin.KeylessCheck, error) {
	c, err := newCheck(k)
	if err != nil {
		return nil, err
	}
	return c.verify, nil
}

// newCheck is prepare's work: every keyless check (a plugin's, VerifyBlob's, VerifyImage's)
// is built here.
func newCheck(k ociplugin.Keyless) (*keylessCheck, error) {
	tr, err := root.NewTrustedRootFromPath(k.TrustedRoot)
	if err != nil {
		return nil, fmt.Errorf("trusted root %s: %w", k.TrustedRoot, err)
	}
	opts := []sigverify.VerifierOption{sigverify.WithTransparencyLog(1), sigverify.WithObserverTimestamps(1)}
	if k.NoTlog {
		opts = []sigverify.VerifierOption{sigverify.WithSignedTimestamps(1)}
	}
	v, err := sigverify.NewVerifier(tr, append(opts, sigverify.WithoutStatementPredicate())...)
	if err != nil {
		return nil, fmt.Errorf("trusted root %s: %w", k.TrustedRoot, err)
	}
	sanRe := ""
	if k.IdentityRegexp != "" {
		sanRe = "^(?:" + k.IdentityRegexp + ")$" // the whole identity, not a part of it
	}
	id, err := sigverify.NewShortCertificateIdentity(k.Issuer, "", k.Identity, sanRe)
	if err != nil {
		return nil, err
	}
	return &keylessCheck{k: k, v: v, id: id}, nil
}

// verify looks for the Sigstore bundles referring to manifest d of r and accepts the
// artifact when one of them verifies. Nothing found is ociplugin.ErrUnsigned; bundles that do not
// verify give each one's reason.
func (c *keylessCheck) verify(r name.Reference, d v1.Hash) error {
	sum, err := hex.DecodeString(d.Hex)
	if err != nil || d.Algorithm != "sha256" {
		return fmt.Errorf("manifest digest %s is not sha256", d)
	}
	policy := sigverify.NewPolicy(sigverify.WithArtifactDigest("sha256", sum), sigverify.WithCertificateIdentity(c.id))
	descs, err := bundleReferrers(r, d)
	if err != nil {
		return err
	}
	var why []string
	for _, desc := range descs {
		b, err := fetchBundle(r.Context().Digest(desc.Digest.String()))
		if b == nil && err == nil {
			continue // an artifact of another kind
		}
		if err == nil {
			err = verifyBundle(c.v, policy, b)
		}
		if err == nil {
			return nil
		}
		why = append(why, fmt.Sprintf("bundle %s: %v", desc.Digest, err))
	}
	if len(why) == 0 {
		return fmt.Errorf("%w for %s: no Sigstore bundle (%s) refers to it", ociplugin.ErrUnsigned, d, BundleType)
	}
	return fmt.Errorf("no Sigstore bundle of %s verifies for identity %s, issuer %q: %s", d, c.k.Describe(), c.k.Issuer, strings.Join(why, "; "))
}

func verifyBundle(v *sigverify.Verifier, policy sigverify.PolicyBuilder, b *bundle.Bundle) error {
	res, err := v.Verify(b, policy)
	if err != nil {
		return err
	}
	if res.Statement != nil && res.Statement.PredicateType != SignPredicate {
		return fmt.Errorf("an attestation of type %q, not a signature (%s)", res.Statement.PredicateType, SignPredicate)
	}
	return nil
}

// bundleReferrers lists the referrers of d whose artifact type is a Sigstore bundle, by the
// registry's referrers API or, where it has none, the sha256-<digest> tag index. Some
// registries list an artifact by its config's media type instead of its artifactType:
// referrers of the empty config's type are candidates too (fetchBundle tells).
func bundleReferrers(r name.Reference, d v1.Hash) ([]v1.Descriptor, error) {
	idx, err := remote.Referrers(r.Context().Digest(d.String()), ociplugin.RemoteOptions()...)
	if err != nil {
		return nil, fmt.Errorf("listing the referrers of %s: %w", d, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("listing the referrers of %s: %w", d, err)
	}
	var out []v1.Descriptor
	for _, m := range im.Manifests {
		if (isBundleType(m.ArtifactType) || m.ArtifactType == string(emptyType)) && len(out) < maxBundles {
			out = append(out, m)
		}
	}
	return out, nil
}

func isBundleType(t string) bool { return strings.HasPrefix(t, "application/vnd.dev.sigstore.bundle") }

// fetchBundle reads the bundle layer of a referrer manifest; nil and no error for an
// artifact that is not a bundle.
func fetchBundle(ref name.Digest) (*bundle.Bundle, error) {
	img, err := remote.Image(ref, ociplugin.RemoteOptions()...)
	if err != nil {
		return nil, err
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, err
	}
	if !isBundleType(m.ArtifactType) {
		return nil, nil
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	if len(layers) != 1 {
		return nil, fmt.Errorf("%d layers, a bundle artifact has one", len(layers))
	}
	rc, err := layers[0].Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	raw, err := io.ReadAll(io.LimitReader(rc, maxBundle+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > maxBundle {
		return nil, fmt.Errorf("bundle larger than %d bytes", maxBundle)
	}
	return parseBundle(raw)
}

func parseBundle(raw []byte) (*bundle.Bundle, error) {
	var b bundle.Bundle
	if err := b.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("not a Sigstore bundle: %w", err)
	}
	return &b, nil
}

// AttachBundle stores a Sigstore bundle (JSON) as a referrer of the artifact ref names, as
// cosign 3 does: an OCI manifest of artifact type BundleType whose subject is the
// artifact's manifest and whose one layer is the bundle. The bundle must sign that
// manifest: a message signature over its bytes (cosign sign-blob of the manifest) or a
// DSSE in-toto statement naming its digest (cosign sign); it is not verified here (that
// needs a policy: the manifest's verify), only checked to be about this artifact.
func AttachBundle(ref string, raw []byte) (string, error) {
	r, err := ociplugin.ParseRef(ref)
	if err != nil {
		return "", err
	}
	desc, err := remote.Get(r, ociplugin.RemoteOptions()...)
	if err != nil {
		return "", fmt.Errorf("attach to %s: %w", ref, err)
	}
	b, err := parseBundle(raw)
	if err != nil {
		return "", fmt.Errorf("attach to %s: %w", ref, err)
	}
	if err := bundleNames(b, desc.Digest); err != nil {
		return "", fmt.Errorf("attach to %s: %w", ref, err)
	}
	content := "message-signature"
	if env, _ := b.Envelope(); env != nil {
		content = "dsse-envelope"
	}
	d, err := attach(r.Context(), desc.Descriptor, raw, content)
	if err != nil {
		return "", fmt.Errorf("attach to %s: %w", ref, err)
	}
	return d, nil
}

// attach writes raw as a bundle referrer of subject in repo and returns its digest.
func attach(repo name.Repository, subject v1.Descriptor, raw []byte, content string) (string, error) {
	layer := static.NewLayer(raw, BundleType)
	if err := remote.WriteLayer(repo, layer, ociplugin.RemoteOptions()...); err != nil {
		return "", err
	}
	if err := remote.WriteLayer(repo, static.NewLayer([]byte("{}"), emptyType), ociplugin.RemoteOptions()...); err != nil {
		return "", err
	}
	m, err := referrerManifest(layer, subject, content)
	if err != nil {
		return "", err
	}
	if err := remote.Put(repo.Digest(m.digest.String()), m, ociplugin.RemoteOptions()...); err != nil {
		return "", err
	}
	return m.digest.String(), nil
}

// bundleNames checks that b signs manifest digest d (without verifying the signature).
func bundleNames(b *bundle.Bundle, d v1.Hash) error {
	sc, err := b.SignatureContent()
	if err != nil {
		return err
	}
	if ms := sc.MessageSignatureContent(); ms != nil {
		if got := hex.EncodeToString(ms.Digest()); ms.DigestAlgorithm() != "SHA2_256" || got != d.Hex {
			return fmt.Errorf("the bundle signs %s:%s, not the artifact's manifest %s", strings.ToLower(ms.DigestAlgorithm()), got, d)
		}
		return nil
	}
	var st struct {
		PredicateType string `json:"predicateType"`
		Subject       []struct {
			Digest map[string]string `json:"digest"`
		} `json:"subject"`
	}
	payload, err := sc.EnvelopeContent().RawEnvelope().DecodeB64Payload()
	if err == nil {
		err = json.Unmarshal(payload, &st)
	}
	if err != nil {
		return fmt.Errorf("the bundle's envelope holds no in-toto statement: %w", err)
	}
	for _, s := range st.Subject {
		if s.Digest["sha256"] == d.Hex {
			return nil
		}
	}
	return fmt.Errorf("the bundle's statement does not name the artifact's manifest %s", d)
}

// rawManifest is a manifest to Put: its bytes, media type and digest.
type rawManifest struct {
	raw    []byte
	digest v1.Hash
}

func (m rawManifest) RawManifest() ([]byte, error)        { return m.raw, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

func referrerManifest(layer v1.Layer, subject v1.Descriptor, content string) (rawManifest, error) {
	ld, err := layer.Digest()
	if err != nil {
		return rawManifest{}, err
	}
	size, err := layer.Size()
	if err != nil {
		return rawManifest{}, err
	}
	empty, _, err := v1.SHA256(strings.NewReader("{}"))
	if err != nil {
		return rawManifest{}, err
	}
	subject.Annotations, subject.Platform, subject.URLs, subject.Data = nil, nil, nil, nil
	raw, err := json.Marshal(v1.Manifest{
		SchemaVersion: 2, MediaType: types.OCIManifestSchema1, ArtifactType: string(BundleType),
		Config:      v1.Descriptor{MediaType: emptyType, Digest: empty, Size: 2},
		Layers:      []v1.Descriptor{{MediaType: BundleType, Digest: ld, Size: size}},
		Subject:     &subject,
		Annotations: map[string]string{"dev.sigstore.bundle.content": content},
	})
	if err != nil {
		return rawManifest{}, err
	}
	d, _, err := v1.SHA256(strings.NewReader(string(raw)))
	return rawManifest{raw: raw, digest: d}, err
}
