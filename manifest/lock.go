package manifest

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/agenthost/agenthost/ociplugin"
)

// LockMode is what loading a manifest does with its lock file, agent.lock beside
// agent.toml (docs/oci.md): the digests its oci:// plugins resolved to.
type LockMode int

const (
	// LockUpdate records what the oci:// references resolved to: a new reference is
	// added, a reference that resolves to other digests than the lock's (a moved tag) is
	// updated with a warning, and a reference the manifest no longer has is dropped. The
	// file is written only when that changes it, and not at all for a manifest that has
	// no oci:// plugin and no lock.
	LockUpdate LockMode = iota
	// LockStrict is --locked: a reference the lock does not have, or that resolves to
	// other digests, is a manifest error, refused before its module is fetched; the
	// lock is never written.
	LockStrict
	// LockOff neither reads nor writes a lock (shell completion, manifests made by a
	// program).
	LockOff
)

// lockState is the lock while a manifest is checked: the file's entries, and what each
// reference resolved to this time.
type lockState struct {
	mode LockMode
	file *ociplugin.Lock
	seen []ociplugin.LockEntry
}

// openLock reads the manifest's lock file for mode. A lock file that does not decode is
// a manifest error naming it, whatever the mode (except LockOff): it is not overwritten.
func (m *Manifest) openLock(mode LockMode) error {
	m.lock = &lockState{mode: mode}
	if mode == LockOff {
		return nil
	}
	l, err := ociplugin.ReadLock(ociplugin.LockPath(m.abs()))
	if err != nil {
		return &Error{File: ociplugin.LockPath(m.Path), Key: "(lock)", Msg: err.Error(), Err: err}
	}
	m.lock.file = l
	return nil
}

// lockCheck is the check a pull of plugin's reference passes (nil when none): under
// LockStrict, the lock's.
func (m *Manifest) lockCheck(plugin string) func(ociplugin.LockEntry) error {
	if m.lock == nil || m.lock.mode != LockStrict {
		return nil
	}
	return func(got ociplugin.LockEntry) error {
		err := m.lock.file.Check(got)
		if le, ok := err.(*ociplugin.LockError); ok {
			le.Plugin, le.File = plugin, ociplugin.LockPath(m.Path)
		}
		return err
	}
}

// lockRecord notes what a plugin's reference resolved to; under LockUpdate a reference
// whose locked digests differ (a tag moved) is a warning.
func (m *Manifest) lockRecord(plugin string, got ociplugin.LockEntry) {
	s := m.lock
	if s == nil || s.mode != LockUpdate {
		return
	}
	if slices.ContainsFunc(s.seen, func(e ociplugin.LockEntry) bool { return e.Ref == got.Ref }) {
		return // two plugins from one reference: one entry
	}
	s.seen = append(s.seen, got)
	if old, ok := s.file.Find(got.Ref); ok && !old.Same(got) {
		m.Warnings = append(m.Warnings, fmt.Sprintf("plugin %q (%s) now resolves to module %s (manifest %s); %s had module %s (manifest %s) and is updated (--locked refuses such a change)",
			plugin, got.Ref, got.Module, got.Manifest, ociplugin.LockPath(m.Path), old.Module, old.Manifest))
	}
}

// finishLock writes the lock file under LockUpdate when what the references resolved to
// is not what it holds. It runs once the whole manifest checked out.
func (m *Manifest) finishLock() error {
	s := m.lock
	if s == nil || s.mode != LockUpdate || s.file.Holds(s.seen) || (!s.file.Exists && len(s.seen) == 0) {
		return nil
	}
	if err := s.file.Write(s.seen); err != nil {
		return &Error{File: ociplugin.LockPath(m.Path), Key: "(lock)", Msg: "write: " + err.Error(), Err: err}
	}
	return nil
}

// abs is the manifest file's absolute path.
func (m *Manifest) abs() string { return filepath.Join(m.Dir, filepath.Base(m.Path)) }
