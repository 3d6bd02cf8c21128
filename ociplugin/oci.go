package ociplugin

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Scheme starts a manifest's registry reference.
const Scheme = "oci://"

// Media types of a plugin artifact and of a signature's payload.
const (
	WasmLayer     types.MediaType = "application/vnd.module.wasm.content.layer.v1+wasm"
	JSLayer       types.MediaType = "application/vnd.agenthost.js.bundle.v1+javascript" // a built JS tool (docs/javascript.md)
	SignedPayload types.MediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	sigAnnotation                 = "dev.cosignproject.cosign/signature"
)

// MediaType is a layer's media type (go-containerregistry's), named here so callers
// need not import it.
type MediaType = types.MediaType

// JSBundleHeader opens a built JavaScript bundle (jsbundle.Header, which a test of
// cmd/agenthost holds equal: ociplugin imports nothing of ours).
const JSBundleHeader = "// agenthost bundle v1 "

// MaxModule bounds a module's layer: a registry cannot make the host read without end.
const MaxModule = 256 << 20

// ParseRef parses "oci://HOST/REPO:TAG" or "oci://HOST/REPO@sha256:…". Plain HTTP is
// allowed only to loopback registries.
func ParseRef(ref string) (name.Reference, error) {
	s, ok := strings.CutPrefix(ref, Scheme)
	if !ok {
		return nil, fmt.Errorf("%q is not an %s reference", ref, Scheme)
	}
	var opts []name.Option
	host := strings.SplitN(s, "/", 2)[0]
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if loopback(strings.Trim(host, "[]")) {
		opts = append(opts, name.Insecure)
	}
	r, err := name.ParseReference(s, append(opts, name.StrictValidation)...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	return r, nil
}

// Pulled is a fetched module: its bytes' file in the cache and digests.
type Pulled struct {
	Path           string          // the cached module
	ModuleDigest   string          // sha256 hex of the module (what a manifest sha256 pin names)
	ManifestDigest string          // "sha256:…" of the artifact's manifest (what is signed)
	Layer          types.MediaType // WasmLayer or JSLayer
}

// PullOptions say where a module is cached and what it must pass first.
type PullOptions struct {
	Cache string // the directory modules are cached in, as <module sha256>.wasm (or .js)
	// Layer is the media type the artifact must have: WasmLayer or JSLayer; "" takes either.
	Layer types.MediaType
	Key   string // a public key file (PEM): the artifact's signature must verify with it
	// Keyless, instead of Key: the artifact must carry a Sigstore bundle that verifies
	// under this policy (keyless.go).
	Keyless *Keyless
	// Check, when set, is shown what the reference resolved to (its manifest's digest and
	// its layer's) before the signature is looked for or the module read: an error it
	// returns is PullWith's, as it is, and nothing is fetched or cached.
	Check func(LockEntry) error
}

// PullWith resolves ref, checks the artifact's shape and (with PullOptions.Key or
// Keyless) its signature, and caches the module under the cache as <module sha256>.wasm; Check, when
// set, sees the resolved digests first (agent.lock under --locked).
func PullWith(ref string, o PullOptions) (Pulled, error) {
	r, err := ParseRef(ref)
	if err != nil {
		return Pulled{}, err
	}
	if o.Key != "" && o.Keyless != nil {
		return Pulled{}, errors.New("a key and a keyless policy exclude each other")
	}
	var keyless KeylessCheck
	if o.Keyless != nil {
		if keyless, err = prepareKeyless(*o.Keyless); err != nil {
			return Pulled{}, err
		}
	}
	desc, layer, err := resolve(r, o.Layer)
	if err != nil {
		return Pulled{}, fmt.Errorf("pull %s: %w", ref, err)
	}
	want, err := layer.Digest()
	if err != nil {
		return Pulled{}, fmt.Errorf("pull %s: %w", ref, err)
	}
	if o.Check != nil {
		if err := o.Check(LockEntry{Ref: ref, Manifest: desc.Digest.String(), Module: want.String()}); err != nil {
			return Pulled{}, err
		}
	}
	if keyless != nil {
		err = keyless(r, desc.Digest)
	} else if o.Key != "" {
		err = verify(r, desc.Digest, o.Key)
	}
	if err != nil {
		return Pulled{}, fmt.Errorf("pull %s: %w", ref, err)
	}
	mod, err := readModule(layer, want)
	if err != nil {
		return Pulled{}, fmt.Errorf("pull %s: %w", ref, err)
	}
	mt, _ := layer.MediaType()
	if mt == JSLayer && !bytes.HasPrefix(mod, []byte(JSBundleHeader)) {
		return Pulled{}, fmt.Errorf("pull %s: the %s layer is not a built bundle (no %q line)", ref, JSLayer, JSBundleHeader)
	}
	p := Pulled{ModuleDigest: strings.TrimPrefix(want.String(), "sha256:"), ManifestDigest: desc.Digest.String(), Layer: mt}
	p.Path, err = cacheModule(o.Cache, p.ModuleDigest, ext[mt], mod)
	return p, err
}

// ext is the cached file's extension, by layer media type.
var ext = map[types.MediaType]string{WasmLayer: ".wasm", JSLayer: ".js"}

// resolve fetches ref's manifest and checks that it is a plugin artifact: one layer of
// media type want (WasmLayer or JSLayer; "" either).
func resolve(r name.Reference, want types.MediaType) (*remote.Descriptor, v1.Layer, error) {
	desc, err := remote.Get(r, RemoteOptions()...)
	if err != nil {
		return nil, nil, err
	}
	img, err := desc.Image()
	if err != nil {
		return nil, nil, err
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, nil, err
	}
	if len(layers) != 1 {
		return nil, nil, fmt.Errorf("%d layers, a plugin artifact has one", len(layers))
	}
	mt, err := layers[0].MediaType()
	switch {
	case err != nil || ext[mt] == "":
		return nil, nil, fmt.Errorf("layer media type %q, want %s or %s", mt, WasmLayer, JSLayer)
	case want != "" && mt != want:
		return nil, nil, fmt.Errorf("layer media type %q, want %s", mt, want)
	}
	return desc, layers[0], nil
}

// readModule reads a layer of at most MaxModule bytes whose sha256 must be want.
func readModule(layer v1.Layer, want v1.Hash) ([]byte, error) {
	rc, err := layer.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	mod, err := io.ReadAll(io.LimitReader(rc, MaxModule+1))
	if err != nil {
		return nil, err
	}
	if len(mod) > MaxModule {
		return nil, fmt.Errorf("module larger than %d bytes", MaxModule)
	}
	sum := sha256.Sum256(mod)
	if got := "sha256:" + fmt.Sprintf("%x", sum); got != want.String() {
		return nil, fmt.Errorf("the layer read is %s, the manifest names %s", got, want)
	}
	return mod, nil
}

// cacheModule writes mod to cache/<digest><ext> (atomically) and returns the path.
func cacheModule(cache, digest, ext string, mod []byte) (string, error) {
	path := filepath.Join(cache, digest+ext)
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(cache, ".pull-*")
	if err != nil {
		return "", err
	}
	if _, err := tmp.Write(mod); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", err
	}
	tmp.Close()
	return path, os.Rename(tmp.Name(), path)
}

// Push uploads a module, or a built JavaScript bundle, as an artifact at ref and, with a
// signing key (PEM, ECDSA P-256), its signature. It returns the artifact's manifest digest.
func Push(module []byte, ref, signKey string) (string, error) {
	mt := WasmLayer
	if bytes.HasPrefix(module, []byte(JSBundleHeader)) {
		mt = JSLayer
	} else if !bytes.HasPrefix(module, []byte("\x00asm")) {
		return "", fmt.Errorf("push %s: not a WebAssembly module (no \\0asm header), nor a JavaScript bundle `agenthost plugins build` wrote", ref)
	}
	r, err := ParseRef(ref)
	if err != nil {
		return "", err
	}
	img, err := mutate.AppendLayers(empty.Image, static.NewLayer(module, mt))
	if err != nil {
		return "", err
	}
	if err := remote.Write(r, img, RemoteOptions()...); err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	if signKey != "" {
		if err := sign(r, d, signKey); err != nil {
			return "", fmt.Errorf("sign %s: %w", ref, err)
		}
	}
	return d.String(), nil
}

// payload is cosign's simple signing payload for a manifest digest.
func payload(repo string, d v1.Hash) []byte {
	b, _ := json.Marshal(map[string]any{"critical": map[string]any{
		"identity": map[string]string{"docker-reference": repo},
		"image":    map[string]string{"docker-manifest-digest": d.String()},
		"type":     "cosign container image signature"}, "optional": nil})
	return b
}

func sigRef(r name.Reference, d v1.Hash) (name.Reference, error) {
	return name.NewTag(r.Context().String()+":"+d.Algorithm+"-"+d.Hex+".sig", name.Insecure)
}

func sign(r name.Reference, d v1.Hash, keyFile string) error {
	key, err := readPrivate(keyFile)
	if err != nil {
		return err
	}
	p := payload(r.Context().String(), d)
	sum := sha256.Sum256(p)
	sig, err := key.Sign(rand.Reader, sum[:], crypto.SHA256)
	if err != nil {
		return err
	}
	layer := static.NewLayer(p, SignedPayload)
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: layer, Annotations: map[string]string{sigAnnotation: base64.StdEncoding.EncodeToString(sig)}})
	if err != nil {
		return err
	}
	t, err := sigRef(r, d)
	if err != nil {
		return err
	}
	return remote.Write(t, img, RemoteOptions()...)
}

// ErrUnsigned is an artifact without a signature where a verify policy asks for one.
var ErrUnsigned = errors.New("no signature")

func verify(r name.Reference, d v1.Hash, keyFile string) error {
	pub, err := readPublic(keyFile)
	if err != nil {
		return err
	}
	t, err := sigRef(r, d)
	if err != nil {
		return err
	}
	img, err := remote.Image(t, RemoteOptions()...)
	if err != nil {
		return fmt.Errorf("%w for %s (looked for %s): %v", ErrUnsigned, d, t, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for i, l := range layers {
		if i >= len(m.Layers) {
			break
		}
		sig, err := base64.StdEncoding.DecodeString(m.Layers[i].Annotations[sigAnnotation])
		if err != nil || len(sig) == 0 {
			continue
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		p, err := io.ReadAll(io.LimitReader(rc, 64<<10))
		rc.Close()
		if err != nil {
			return err
		}
		var body struct {
			Critical struct {
				Image struct {
					Digest string `json:"docker-manifest-digest"`
				} `json:"image"`
			} `json:"critical"`
		}
		if json.Unmarshal(p, &body) != nil || body.Critical.Image.Digest != d.String() {
			continue // a signature of something else
		}
		sum := sha256.Sum256(p)
		if ecdsa.VerifyASN1(pub, sum[:], sig) {
			return nil
		}
	}
	return fmt.Errorf("signature of %s does not verify with %s", d, keyFile)
}

func readPEM(path string) (*pem.Block, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(bytes.TrimSpace(b))
	if blk == nil {
		return nil, fmt.Errorf("%s holds no PEM block", path)
	}
	return blk, nil
}

func readPublic(path string) (*ecdsa.PublicKey, error) {
	blk, err := readPEM(path)
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	pub, ok := k.(*ecdsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("%s is not an ECDSA public key", path)
	}
	return pub, nil
}

func readPrivate(path string) (*ecdsa.PrivateKey, error) {
	blk, err := readPEM(path)
	if err != nil {
		return nil, err
	}
	if k, err := x509.ParseECPrivateKey(blk.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	priv, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s is not an ECDSA private key", path)
	}
	return priv, nil
}

// RemoteOptions are every registry call's: HTTPS (plain HTTP to loopback only) and the
// credentials of the docker config ($DOCKER_CONFIG/config.json or ~/.docker/config.json,
// and the credential helpers it names), as `docker login` and other tools leave them, so
// an authenticated registry needs no key of its own in agent.toml. None found: anonymous.
func RemoteOptions() []remote.Option {
	return []remote.Option{remote.WithTransport(httpsOnly{}), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
}

// httpsOnly refuses plain HTTP except to loopback addresses: go-containerregistry itself
// speaks HTTP to private-range registries, which would send a pull over the network in
// clear.
type httpsOnly struct{}

func (httpsOnly) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme == "http" && !loopback(r.URL.Hostname()) {
		return nil, fmt.Errorf("plain HTTP to %s refused: only loopback registries are reached without TLS", r.URL.Host)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func loopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}
