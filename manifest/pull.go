package manifest

import (
	"path/filepath"
	"strings"

	"github.com/agenthost/agenthost/ociplugin"
)

// pullPlugin fetches a plugin whose wasm is an oci:// reference into the manifest's cache
// (.agenthost/oci), checking its signature when the entry has verify, and points the
// entry at the cached module with its digest as the sha256 pin: from there the plugin
// loads like a local file, and the sandbox checks the bytes it compiles against that
// digest. A pin the manifest gives must match what was pulled. What the reference
// resolved to is checked against agent.lock (--locked) or recorded there (lock.go).
func (m *Manifest) pullPlugin(p *PluginConfig, key string) error {
	ref := p.Wasm
	opts := ociplugin.PullOptions{Cache: filepath.Join(m.Dir, ".agenthost", "oci"), Check: m.lockCheck(p.Name)}
	if v := p.Verify; v != nil {
		keyless := v.Identity != "" || v.IdentityRegexp != "" || v.Issuer != "" || v.TrustedRoot != "" || v.Tlog != nil
		switch {
		case v.Key != "" && keyless:
			return m.ErrorAt(key+".verify", "verify takes a key, or identity, issuer and trusted_root (keyless), not both")
		case v.Key != "":
			k, err := m.inside(key+".verify.key", v.Key)
			if err != nil {
				return err
			}
			opts.Key = k
		case !keyless:
			return m.ErrorAt(key+".verify", "verify needs a key (a PEM public key file), or identity, issuer and trusted_root (keyless)")
		default:
			k := ociplugin.Keyless{Identity: v.Identity, IdentityRegexp: v.IdentityRegexp, Issuer: v.Issuer, NoTlog: v.Tlog != nil && !*v.Tlog}
			if v.TrustedRoot != "" {
				tr, err := m.inside(key+".verify.trusted_root", v.TrustedRoot)
				if err != nil {
					return err
				}
				k.TrustedRoot = tr
			}
			if err := k.Validate(); err != nil {
				return m.ErrorAt(key+".verify", "%v", err)
			}
			opts.Keyless = &k
		}
	}
	got, err := ociplugin.PullWith(ref, opts)
	if err != nil {
		return m.ErrorAt(key+".wasm", "%v", err)
	}
	if p.SHA256 != "" && !strings.EqualFold(p.SHA256, got.ModuleDigest) {
		return m.ErrorAt(key+".sha256", "digest mismatch for %s: sha256 pins %s, the registry served %s", ref, p.SHA256, got.ModuleDigest)
	}
	m.lockRecord(p.Name, ociplugin.LockEntry{Ref: ref, Manifest: got.ManifestDigest, Module: "sha256:" + got.ModuleDigest})
	p.Source, p.Wasm, p.SHA256 = ref, got.Path, got.ModuleDigest
	return nil
}
