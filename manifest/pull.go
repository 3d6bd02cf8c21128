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
	got, err := m.pull(p, key, "wasm", p.Wasm, ociplugin.WasmLayer)
	if err != nil {
		return err
	}
	if p.SHA256 != "" && !strings.EqualFold(p.SHA256, got.ModuleDigest) {
		return m.ErrorAt(key+".sha256", "digest mismatch for %s: sha256 pins %s, the registry served %s", p.Wasm, p.SHA256, got.ModuleDigest)
	}
	m.lockRecord(p.Name, ociplugin.LockEntry{Ref: p.Wasm, Manifest: got.ManifestDigest, Module: "sha256:" + got.ModuleDigest})
	p.Source, p.Wasm, p.SHA256 = p.Wasm, got.Path, got.ModuleDigest
	return nil
}

// pullJS fetches a JavaScript plugin whose js is an oci:// reference: a built bundle
// (layer ociplugin.JSLayer), checked, signed and locked as a module is, and cached as
// <sha256>.js, which the host then runs as it is. The entry's sha256, if any, still
// pins the runtime module the bundle runs in, not the bundle: the layer's digest, the
// signature and agent.lock hold the bundle.
func (m *Manifest) pullJS(p *PluginConfig, key string) error {
	got, err := m.pull(p, key, "js", p.JS, ociplugin.JSLayer)
	if err != nil {
		return err
	}
	m.lockRecord(p.Name, ociplugin.LockEntry{Ref: p.JS, Manifest: got.ManifestDigest, Module: "sha256:" + got.ModuleDigest})
	p.Source, p.JS = p.JS, got.Path
	return nil
}

// pull fetches ref (the entry's field) into the manifest's cache, an artifact of media
// type layer, verified by the entry's verify and checked against agent.lock.
func (m *Manifest) pull(p *PluginConfig, key, field, ref string, layer ociplugin.MediaType) (ociplugin.Pulled, error) {
	opts := ociplugin.PullOptions{Cache: filepath.Join(m.Dir, ".agenthost", "oci"), Check: m.lockCheck(p.Name), Layer: layer}
	if v := p.Verify; v != nil {
		keyless := v.Identity != "" || v.IdentityRegexp != "" || v.Issuer != "" || v.TrustedRoot != "" || v.Tlog != nil
		switch {
		case v.Key != "" && keyless:
			return ociplugin.Pulled{}, m.ErrorAt(key+".verify", "verify takes a key, or identity, issuer and trusted_root (keyless), not both")
		case v.Key != "":
			k, err := m.inside(key+".verify.key", v.Key)
			if err != nil {
				return ociplugin.Pulled{}, err
			}
			opts.Key = k
		case !keyless:
			return ociplugin.Pulled{}, m.ErrorAt(key+".verify", "verify needs a key (a PEM public key file), or identity, issuer and trusted_root (keyless)")
		default:
			k := ociplugin.Keyless{Identity: v.Identity, IdentityRegexp: v.IdentityRegexp, Issuer: v.Issuer, NoTlog: v.Tlog != nil && !*v.Tlog}
			if v.TrustedRoot != "" {
				tr, err := m.inside(key+".verify.trusted_root", v.TrustedRoot)
				if err != nil {
					return ociplugin.Pulled{}, err
				}
				k.TrustedRoot = tr
			}
			if err := k.Validate(); err != nil {
				return ociplugin.Pulled{}, m.ErrorAt(key+".verify", "%v", err)
			}
			opts.Keyless = &k
		}
	}
	got, err := ociplugin.PullWith(ref, opts)
	if err != nil {
		return got, m.ErrorAt(key+"."+field, "%v", err)
	}
	return got, nil
}
