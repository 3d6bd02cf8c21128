package keyless

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agenthost/agenthost/ociplugin"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
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

// keylessCheck is a Keyless policy the helper found usable (its trusted root read, its
// identity built) before the registry is asked anything.
type keylessCheck struct {
	k ociplugin.Keyless
}

func init() { ociplugin.RegisterKeyless(prepare) }

// prepare has the helper check the policy's trusted root and identity; the policy was
// validated by ociplugin.
func prepare(k ociplugin.Keyless) (ociplugin.KeylessCheck, error) {
	c, err := newCheck(k)
	if err != nil {
		return nil, err
	}
	return c.verify, nil
}

// newCheck is prepare's work: every keyless check (a plugin's, VerifyBlob's, VerifyImage's)
// starts here.
func newCheck(k ociplugin.Keyless) (*keylessCheck, error) {
	res, err := call(HelperRequest{Op: OpCheck, Policy: k})
	if err == nil && res.Error != "" {
		err = errors.New(res.Error)
	}
	if err != nil {
		return nil, err
	}
	return &keylessCheck{k: k}, nil
}

// verify looks for the Sigstore bundles referring to manifest d of r and accepts the
// artifact when one of them verifies. Nothing found is ociplugin.ErrUnsigned; bundles that do not
// verify give each one's reason.
func (c *keylessCheck) verify(r name.Reference, d v1.Hash) error {
	if _, err := hex.DecodeString(d.Hex); err != nil || d.Algorithm != "sha256" {
		return fmt.Errorf("manifest digest %s is not sha256", d)
	}
	descs, err := bundleReferrers(r, d)
	if err != nil {
		return err
	}
	var why []string
	var raws [][]byte
	var from []v1.Descriptor
	for _, desc := range descs {
		raw, err := fetchBundle(r.Context().Digest(desc.Digest.String()))
		switch {
		case err != nil:
			why = append(why, fmt.Sprintf("bundle %s: %v", desc.Digest, err))
		case raw != nil:
			raws, from = append(raws, raw), append(from, desc)
		} // else an artifact of another kind
	}
	if len(raws) > 0 {
		res, err := call(HelperRequest{Op: OpVerify, Policy: c.k, Digest: d.String(), Bundles: raws})
		switch {
		case err != nil:
			return err
		case res.Error != "":
			return errors.New(res.Error)
		case res.Verified != nil:
			return nil
		}
		for i, e := range res.Errors {
			why = append(why, fmt.Sprintf("bundle %s: %s", from[i].Digest, e))
		}
	}
	if len(why) == 0 {
		return fmt.Errorf("%w for %s: no Sigstore bundle (%s) refers to it", ociplugin.ErrUnsigned, d, BundleType)
	}
	return fmt.Errorf("no Sigstore bundle of %s verifies for identity %s, issuer %q: %s", d, c.k.Describe(), c.k.Issuer, strings.Join(why, "; "))
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

// fetchBundle reads the bundle layer of a referrer manifest (not parsed: the helper
// does); nil and no error for an artifact that is not a bundle.
func fetchBundle(ref name.Digest) ([]byte, error) {
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
	return raw, nil
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
	if len(raw) > maxBundle {
		return "", fmt.Errorf("attach to %s: bundle larger than %d bytes", ref, maxBundle)
	}
	res, err := call(HelperRequest{Op: OpNames, Digest: desc.Digest.String(), Bundles: [][]byte{raw}})
	if err == nil && res.Error != "" {
		err = errors.New(res.Error)
	}
	if err != nil {
		return "", fmt.Errorf("attach to %s: %w", ref, err)
	}
	content := res.Content
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
