package sigstoretest

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// CA is one virtual Sigstore: its own root, Fulcio intermediate, Rekor key and TSA.
type CA struct{ vs *ca.VirtualSigstore }

// New makes a virtual Sigstore with fresh keys.
func New() (*CA, error) {
	vs, err := ca.NewVirtualSigstore()
	return &CA{vs}, err
}

// WriteTrustedRoot writes the CA's trusted_root.json (Sigstore's trusted-root format).
func (c *CA) WriteTrustedRoot(path string) error {
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, c.vs.FulcioCertificateAuthorities(), rawIDs(c.vs.CTLogs()),
		c.vs.TimestampingAuthorities(), rawIDs(c.vs.RekorLogs()))
	if err != nil {
		return err
	}
	b, err := tr.MarshalJSON()
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// rawIDs gives the logs their IDs as bytes: the virtual Sigstore keeps each as its hex
// text, which a trusted_root.json would hold as the bytes of that text.
func rawIDs(logs map[string]*root.TransparencyLog) map[string]*root.TransparencyLog {
	out := map[string]*root.TransparencyLog{}
	for k, l := range logs {
		c := *l
		if id, err := hex.DecodeString(string(l.ID)); err == nil {
			c.ID = id
		}
		out[k] = &c
	}
	return out
}

// Options shape a bundle: without its transparency-log entry, without its timestamp
// authority's timestamp, or with a certificate from another CA's Fulcio (logged and
// timestamped by this one).
type Options struct {
	NoTlog, NoTimestamp bool
	CertFrom            *CA
}

// MessageBundle is a v0.3 bundle of a message signature over blob (what `cosign sign-blob`
// makes) by a certificate for identity (an e-mail SAN) and issuer, with a hashedrekord
// log entry (inclusion proof and promise) and an RFC 3161 timestamp.
func (c *CA) MessageBundle(identity, issuer string, blob []byte, o Options) ([]byte, error) {
	fulcio := c.vs
	if o.CertFrom != nil {
		fulcio = o.CertFrom.vs
	}
	cert, key, err := fulcio.GenerateLeafCert(identity, issuer)
	if err != nil {
		return nil, err
	}
	priv, ok := key.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("the virtual Fulcio gave a key that is not ECDSA")
	}
	sum := sha256.Sum256(blob)
	sig, err := ecdsa.SignASN1(rand.Reader, priv, sum[:])
	if err != nil {
		return nil, err
	}
	certPEM, err := cryptoutils.MarshalCertificateToPEM(cert)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(map[string]any{"apiVersion": "0.0.1", "kind": "hashedrekord", "spec": map[string]any{
		"data":      map[string]any{"hash": map[string]string{"algorithm": "sha256", "value": hex.EncodeToString(sum[:])}},
		"signature": map[string]any{"content": base64.StdEncoding.EncodeToString(sig), "publicKey": map[string]string{"content": base64.StdEncoding.EncodeToString(certPEM)}}}})
	if err != nil {
		return nil, err
	}
	pb := &protobundle.Bundle{Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
		MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: sum[:]}, Signature: sig}}}
	return c.finish(pb, cert.Raw, sig, body, "hashedrekord", o)
}

// StatementBundle is a v0.3 bundle of a DSSE envelope holding an in-toto statement of
// predicateType about the sha256 digest subjectHex (what `cosign sign` of an image makes,
// with predicate type https://sigstore.dev/cosign/sign/v1), its dsse log entry carrying
// an inclusion proof.
func (c *CA) StatementBundle(identity, issuer, predicateType, subjectHex string, o Options) ([]byte, error) {
	st, err := json.Marshal(map[string]any{"_type": "https://in-toto.io/Statement/v1", "predicateType": predicateType, "predicate": map[string]any{},
		"subject": []map[string]any{{"name": "plugin", "digest": map[string]string{"sha256": subjectHex}}}})
	if err != nil {
		return nil, err
	}
	ent, err := c.vs.AttestAtTime(identity, issuer, st, time.Now().Add(time.Minute), true)
	if err != nil {
		return nil, err
	}
	vc, _ := ent.VerificationContent()
	sc, _ := ent.SignatureContent()
	env := sc.EnvelopeContent().RawEnvelope()
	payload, err := env.DecodeB64Payload()
	if err != nil {
		return nil, err
	}
	sig, err := base64.StdEncoding.DecodeString(env.Signatures[0].Sig)
	if err != nil {
		return nil, err
	}
	entries, _ := ent.TlogEntries()
	tle := entries[0].TransparencyLogEntry()
	tle.KindVersion = &protorekor.KindVersion{Kind: "dsse", Version: "0.0.1"}
	pb := &protobundle.Bundle{Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{
		Payload: payload, PayloadType: env.PayloadType, Signatures: []*protodsse.Signature{{Sig: sig}}}}}
	pb.MediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	vm := &protobundle.VerificationMaterial{Content: &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: vc.Certificate().Raw}}}
	if !o.NoTlog {
		vm.TlogEntries = []*protorekor.TransparencyLogEntry{tle}
	}
	if !o.NoTimestamp {
		ts, _ := ent.Timestamps()
		vm.TimestampVerificationData = &protobundle.TimestampVerificationData{Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: ts[0]}}}
	}
	pb.VerificationMaterial = vm
	return (&bundle.Bundle{Bundle: pb}).MarshalJSON()
}

// finish adds the verification material to pb: the certificate, the log entry of body
// (its inclusion promise and proof from the virtual Rekor) and the TSA's timestamp of sig.
func (c *CA) finish(pb *protobundle.Bundle, certDER, sig, body []byte, kind string, o Options) ([]byte, error) {
	pb.MediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	vm := &protobundle.VerificationMaterial{Content: &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: certDER}}}
	if !o.NoTlog {
		tle, err := c.logEntry(body, kind)
		if err != nil {
			return nil, err
		}
		vm.TlogEntries = []*protorekor.TransparencyLogEntry{tle}
	}
	if !o.NoTimestamp {
		tsr, err := c.vs.TimestampResponse(sig)
		if err != nil {
			return nil, err
		}
		vm.TimestampVerificationData = &protobundle.TimestampVerificationData{Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: tsr}}}
	}
	pb.VerificationMaterial = vm
	return (&bundle.Bundle{Bundle: pb}).MarshalJSON()
}

// logEntry is the virtual Rekor's entry for body at index 0: its signed entry timestamp
// and its inclusion proof in a one-leaf tree, with a signed checkpoint.
func (c *CA) logEntry(body []byte, kind string) (*protorekor.TransparencyLogEntry, error) {
	logID, err := c.vs.RekorLogID()
	if err != nil {
		return nil, err
	}
	rawID, err := hex.DecodeString(logID)
	if err != nil {
		return nil, err
	}
	when := time.Now().Add(time.Minute).Unix()
	set, err := c.vs.RekorSignPayload(tlog.RekorPayload{Body: base64.StdEncoding.EncodeToString(body), IntegratedTime: when, LogIndex: 0, LogID: logID})
	if err != nil {
		return nil, err
	}
	proof, err := c.vs.GetInclusionProof(body)
	if err != nil {
		return nil, err
	}
	rootHash, err := hex.DecodeString(*proof.RootHash)
	if err != nil {
		return nil, err
	}
	return &protorekor.TransparencyLogEntry{
		LogIndex: 0, LogId: &protocommon.LogId{KeyId: rawID}, KindVersion: &protorekor.KindVersion{Kind: kind, Version: "0.0.1"},
		IntegratedTime: when, InclusionPromise: &protorekor.InclusionPromise{SignedEntryTimestamp: set},
		InclusionProof: &protorekor.InclusionProof{LogIndex: *proof.LogIndex, RootHash: rootHash, TreeSize: *proof.TreeSize,
			Checkpoint: &protorekor.Checkpoint{Envelope: *proof.Checkpoint}},
		CanonicalizedBody: body,
	}, nil
}
