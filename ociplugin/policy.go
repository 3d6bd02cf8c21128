package ociplugin

import (
	"errors"
	"fmt"
	"regexp"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Keyless is a keyless verify policy: the artifact must carry a Sigstore bundle whose
// certificate chains to a Fulcio CA of TrustedRoot and names this identity and issuer.
type Keyless struct {
	Identity       string // the certificate's subject alternative name (an e-mail, a URI), exactly
	IdentityRegexp string // or a regular expression the whole subject alternative name matches
	Issuer         string // the OIDC issuer the certificate names, exactly
	TrustedRoot    string // a trusted_root.json file (Sigstore's trusted-root format)
	// NoTlog accepts a bundle without a transparency-log entry; it must then carry a
	// timestamp signed by a timestamp authority of TrustedRoot instead.
	NoTlog bool
}

// Validate says what is missing or contradictory in the policy.
func (k Keyless) Validate() error {
	switch {
	case k.Identity == "" && k.IdentityRegexp == "":
		return errors.New("keyless verify needs identity (or identity_regexp): the signer's certificate identity")
	case k.Identity != "" && k.IdentityRegexp != "":
		return errors.New("identity and identity_regexp exclude each other")
	case k.Issuer == "":
		return errors.New("keyless verify needs issuer: the OIDC issuer of the signer's certificate (e.g. https://token.actions.githubusercontent.com)")
	case k.TrustedRoot == "":
		return errors.New("keyless verify needs trusted_root: a Sigstore trusted_root.json file")
	}
	if k.IdentityRegexp != "" {
		if _, err := regexp.Compile(k.IdentityRegexp); err != nil {
			return fmt.Errorf("identity_regexp: %w", err)
		}
	}
	return nil
}

// Describe names the policy's identity for messages: quoted, or "matching" its regexp.
func (k Keyless) Describe() string {
	if k.IdentityRegexp != "" {
		return fmt.Sprintf("matching %q", k.IdentityRegexp)
	}
	return fmt.Sprintf("%q", k.Identity)
}

// KeylessCheck verifies the Sigstore bundles that refer to manifest d of r under one
// Keyless policy: nil when one of them verifies.
type KeylessCheck func(r name.Reference, d v1.Hash) error

// keylessPrepare turns a policy into its check (its trusted root read, its verifier built)
// before the registry is asked anything. Sigstore's client is linked only by programs that
// import ociplugin/keyless (the host does), which registers it: a program that only
// reads manifests (manifest, which pulls with this package) links no Sigstore, TUF or
// gRPC code.
var keylessPrepare struct {
	sync.Mutex
	fn func(Keyless) (KeylessCheck, error)
}

// RegisterKeyless installs the verifier of keyless policies; ociplugin/keyless calls
// it from its init. Registering twice panics, as database/sql's Register does.
func RegisterKeyless(prepare func(Keyless) (KeylessCheck, error)) {
	keylessPrepare.Lock()
	defer keylessPrepare.Unlock()
	if keylessPrepare.fn != nil {
		panic("ociplugin: RegisterKeyless called twice")
	}
	keylessPrepare.fn = prepare
}

// prepareKeyless validates k and builds its check with the registered verifier.
func prepareKeyless(k Keyless) (KeylessCheck, error) {
	if err := k.Validate(); err != nil {
		return nil, err
	}
	keylessPrepare.Lock()
	prepare := keylessPrepare.fn
	keylessPrepare.Unlock()
	if prepare == nil {
		return nil, errors.New("keyless verification is not linked into this program (import github.com/agenthost/agenthost/ociplugin/keyless)")
	}
	return prepare(k)
}
