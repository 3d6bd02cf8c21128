package ociplugin

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// LockVersion is the lock file format this package reads and writes.
const LockVersion = 1

// Lock is a lock file (agent.lock beside agent.toml): the digests each oci:// reference
// of a manifest resolved to, one entry per reference, in the order of the references.
type Lock struct {
	Version int         `toml:"version"`
	Plugins []LockEntry `toml:"plugin"`

	// File is where the lock is read from and written to; Exists is whether it was there.
	File   string `toml:"-"`
	Exists bool   `toml:"-"`
}

// LockEntry is one reference and what it resolved to.
type LockEntry struct {
	Ref      string `toml:"ref"`      // oci://REGISTRY/REPO:TAG or …@sha256:…, as the manifest writes it
	Manifest string `toml:"manifest"` // sha256:… of the artifact's manifest (what a signature signs)
	Module   string `toml:"module"`   // sha256:… of the module (what the sandbox checks)
}

// Same reports whether e and o name the same bytes: both digests are equal.
func (e LockEntry) Same(o LockEntry) bool { return e.Manifest == o.Manifest && e.Module == o.Module }

func (e LockEntry) describe() string {
	return fmt.Sprintf("module %s (manifest %s)", e.Module, e.Manifest)
}

// LockPath is the lock file of a manifest: its name with .lock for its extension
// (agent.toml: agent.lock), in the same directory.
func LockPath(manifest string) string {
	ext := filepath.Ext(manifest)
	if ext == ".lock" {
		return manifest + ".lock"
	}
	return strings.TrimSuffix(manifest, ext) + ".lock"
}

var digestForm = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ReadLock reads the lock file at path. A file that is not there is an empty lock
// (Exists false); one that does not decode strictly, has another version, an entry
// without a reference or a digest that is not sha256:<64 hex digits>, or a reference
// twice is an error naming the file.
func ReadLock(path string) (*Lock, error) {
	l := &Lock{Version: LockVersion, File: path}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, err
	}
	l.Exists = true
	md, err := toml.Decode(string(data), l)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, fmt.Errorf("%s: unknown key %s", path, und[0])
	}
	if l.Version != LockVersion {
		return nil, fmt.Errorf("%s: version %d, this agenthost reads version %d", path, l.Version, LockVersion)
	}
	seen := map[string]bool{}
	for i, e := range l.Plugins {
		switch {
		case e.Ref == "":
			return nil, fmt.Errorf("%s: plugin %d has no ref", path, i+1)
		case seen[e.Ref]:
			return nil, fmt.Errorf("%s: %s is there twice", path, e.Ref)
		case !digestForm.MatchString(e.Manifest) || !digestForm.MatchString(e.Module):
			return nil, fmt.Errorf("%s: %s: manifest and module must be sha256:<64 hex digits>", path, e.Ref)
		}
		seen[e.Ref] = true
	}
	return l, nil
}

// Find returns the entry of ref.
func (l *Lock) Find(ref string) (LockEntry, bool) {
	for _, e := range l.Plugins {
		if e.Ref == ref {
			return e, true
		}
	}
	return LockEntry{}, false
}

// LockError is a resolved reference that a lock does not hold: missing from it, or
// locked to other digests.
type LockError struct {
	File     string     // the lock file
	Plugin   string     // the manifest entry that names Resolved.Ref ("" when none does)
	Locked   *LockEntry // nil: the reference is not in the lock
	Resolved LockEntry
	NoFile   bool // there is no lock file at all
}

func (e *LockError) Error() string {
	what := e.Resolved.Ref
	if e.Plugin != "" {
		what = fmt.Sprintf("plugin %q (%s)", e.Plugin, e.Resolved.Ref)
	}
	name := e.File
	switch {
	case e.NoFile:
		return fmt.Sprintf("--locked: %s is not in %s, which does not exist (it resolved to %s); run once without --locked to write it",
			what, name, e.Resolved.describe())
	case e.Locked == nil:
		return fmt.Sprintf("--locked: %s is not in %s (it resolved to %s); run once without --locked to record it",
			what, name, e.Resolved.describe())
	}
	return fmt.Sprintf("--locked: %s resolved to %s, but %s has %s; if the change is expected, run once without --locked to record it",
		what, e.Resolved.describe(), name, e.Locked.describe())
}

// Check is what --locked asks of a resolved reference: the lock has it, with the same
// digests. Otherwise it returns a *LockError.
func (l *Lock) Check(got LockEntry) error {
	e, ok := l.Find(got.Ref)
	switch {
	case !ok:
		return &LockError{File: l.File, Resolved: got, NoFile: !l.Exists}
	case !e.Same(got):
		return &LockError{File: l.File, Locked: &e, Resolved: got}
	}
	return nil
}

// sorted is entries ordered by reference, the order a lock file is written in.
func sorted(entries []LockEntry) []LockEntry {
	out := slices.Clone(entries)
	slices.SortFunc(out, func(a, b LockEntry) int { return strings.Compare(a.Ref, b.Ref) })
	return out
}

// Holds reports whether the lock holds exactly entries (in any order).
func (l *Lock) Holds(entries []LockEntry) bool {
	return slices.Equal(sorted(l.Plugins), sorted(entries))
}

const lockHeader = `# This file is written by agenthost: the digests the oci:// plugins of the manifest
# beside it resolved to. Commit it with the manifest; "agenthost --locked …" refuses a
# plugin that is not here or that resolves to other digests, and never writes this file.
`

// Encode is the lock file's text: a comment, the version, then one [[plugin]] table per
// reference, ordered by reference.
func (l *Lock) Encode() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(lockHeader)
	enc := toml.NewEncoder(&buf)
	enc.Indent = ""
	out := struct {
		Version int         `toml:"version"`
		Plugins []LockEntry `toml:"plugin"`
	}{LockVersion, sorted(l.Plugins)}
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Write replaces the lock file with entries (atomically: a reader sees the old file or
// the new one).
func (l *Lock) Write(entries []LockEntry) error {
	l.Plugins, l.Version = entries, LockVersion
	data, err := l.Encode()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(l.File), ".lock-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), l.File); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	l.Exists = true
	return nil
}
