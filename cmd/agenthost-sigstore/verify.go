package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	sigverify "github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/agenthost/agenthost/ociplugin"
	"github.com/agenthost/agenthost/ociplugin/keyless"
)

// answer carries out one request.
func answer(req keyless.HelperRequest) keyless.HelperResponse {
	switch req.Op {
	case keyless.OpCheck:
		if _, err := newCheck(req.Policy); err != nil {
			return keyless.HelperResponse{Error: err.Error()}
		}
		return keyless.HelperResponse{}
	case keyless.OpVerify:
		return verifyAll(req)
	case keyless.OpNames:
		content, err := names(req.Bundles, req.Digest)
		if err != nil {
			return keyless.HelperResponse{Error: err.Error()}
		}
		return keyless.HelperResponse{Content: content}
	}
	return keyless.HelperResponse{Error: fmt.Sprintf("unknown request %q", req.Op)}
}

// check is a keyless policy made ready: its trusted root read, its verifier and
// certificate identity built.
type check struct {
	v  *sigverify.Verifier
	id sigverify.CertificateIdentity
}

func newCheck(k ociplugin.Keyless) (*check, error) {
	if err := k.Validate(); err != nil {
		return nil, err
	}
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
	return &check{v: v, id: id}, nil
}

// verifyAll answers which of the request's bundles, if any, verifies for its policy over
// its artifact (a manifest's digest, or a blob's bytes), and why each other one does not.
func verifyAll(req keyless.HelperRequest) keyless.HelperResponse {
	c, err := newCheck(req.Policy)
	if err != nil {
		return keyless.HelperResponse{Error: err.Error()}
	}
	var artifact sigverify.ArtifactPolicyOption
	switch {
	case req.Digest == "":
		artifact = sigverify.WithArtifact(bytes.NewReader(req.Blob))
	default:
		algo, hexSum, _ := strings.Cut(req.Digest, ":")
		sum, err := hex.DecodeString(hexSum)
		if err != nil || algo != "sha256" || len(sum) != 32 {
			return keyless.HelperResponse{Error: fmt.Sprintf("manifest digest %s is not sha256", req.Digest)}
		}
		artifact = sigverify.WithArtifactDigest("sha256", sum)
	}
	policy := sigverify.NewPolicy(artifact, sigverify.WithCertificateIdentity(c.id))
	out := keyless.HelperResponse{Errors: make([]string, len(req.Bundles))}
	for i, raw := range req.Bundles {
		b, err := parseBundle(raw)
		if err == nil {
			err = verifyBundle(c.v, policy, b)
		}
		if err == nil {
			out.Verified, out.Errors = &i, nil
			return out
		}
		out.Errors[i] = err.Error()
		if req.Digest == "" { // a blob's policy reads its reader: one bundle a request
			break
		}
	}
	return out
}

func verifyBundle(v *sigverify.Verifier, policy sigverify.PolicyBuilder, b *bundle.Bundle) error {
	res, err := v.Verify(b, policy)
	if err != nil {
		return err
	}
	if res.Statement != nil && res.Statement.PredicateType != keyless.SignPredicate {
		return fmt.Errorf("an attestation of type %q, not a signature (%s)", res.Statement.PredicateType, keyless.SignPredicate)
	}
	return nil
}

func parseBundle(raw []byte) (*bundle.Bundle, error) {
	var b bundle.Bundle
	if err := b.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("not a Sigstore bundle: %w", err)
	}
	return &b, nil
}

// names checks that the one bundle signs manifest digest d (without verifying the
// signature) and says how: "message-signature" or "dsse-envelope".
func names(bundles [][]byte, d string) (string, error) {
	if len(bundles) != 1 {
		return "", fmt.Errorf("%d bundles, want one", len(bundles))
	}
	b, err := parseBundle(bundles[0])
	if err != nil {
		return "", err
	}
	_, want, _ := strings.Cut(d, ":")
	sc, err := b.SignatureContent()
	if err != nil {
		return "", err
	}
	if ms := sc.MessageSignatureContent(); ms != nil {
		if got := hex.EncodeToString(ms.Digest()); ms.DigestAlgorithm() != "SHA2_256" || got != want {
			return "", fmt.Errorf("the bundle signs %s:%s, not the artifact's manifest %s", strings.ToLower(ms.DigestAlgorithm()), got, d)
		}
		return "message-signature", nil
	}
	var st struct {
		Subject []struct {
			Digest map[string]string `json:"digest"`
		} `json:"subject"`
	}
	payload, err := sc.EnvelopeContent().RawEnvelope().DecodeB64Payload()
	if err == nil {
		err = json.Unmarshal(payload, &st)
	}
	if err != nil {
		return "", fmt.Errorf("the bundle's envelope holds no in-toto statement: %w", err)
	}
	for _, s := range st.Subject {
		if s.Digest["sha256"] == want {
			return "dsse-envelope", nil
		}
	}
	return "", fmt.Errorf("the bundle's statement does not name the artifact's manifest %s", d)
}
