package manifest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
)

// Paths the manifest names stay inside its directory (README.md, "Paths"). The confined
// keys are those that choose what the host reads or grants: workflow_files,
// plugins.permissions.allowed_paths, plugins.verify.key and .trusted_root,
// mcp_servers.cwd and .roots, auth.oidc.jwks_file. Each is relative, does not climb out with "..", and does
// not leave through a symbolic link (os.Root decides, following the links that stay
// inside); a file that is not there is left for the caller to report. A manifest-level
// allow_outside_paths = true lets them be absolute or outside.
//
// Not confined, by decision: programs (providers.command, mcp_servers.command and
// plugins.wasm: code the manifest runs, found through PATH or pinned by sha256, often
// built elsewhere), a command's sandbox.read and .write (they narrow what a process that
// would otherwise reach everything may reach; system paths are absolute by nature) and
// the host's own state (store.path, store.key_file: a key belongs out of the repository).

// outsideHint ends every refusal: how to allow what was refused.
const outsideHint = "paths in the manifest stay inside its directory; allow_outside_paths = true lets them out"

// inside resolves p, the value at key, against the manifest's directory and refuses it
// when it is absolute or leaves the directory.
func (m *Manifest) inside(key, p string) (string, error) {
	if p == "" || m.AllowOutsidePaths {
		return m.Resolve(p), nil
	}
	rel, err := m.localPath(key, p)
	if err != nil {
		return "", err
	}
	root, err := os.OpenRoot(m.Dir)
	if err != nil { // no directory (a manifest Parse made up): nothing to follow
		return filepath.Join(m.Dir, rel), nil
	}
	defer root.Close()
	if _, err := root.Stat(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", m.ErrorAt(key, "%s: %s (%s)", p, pathErr(err), outsideHint)
	}
	return filepath.Join(m.Dir, rel), nil
}

// localPath is p cleaned when it is relative and stays inside the directory by its
// names alone.
func (m *Manifest) localPath(key, p string) (string, error) {
	if filepath.IsAbs(p) {
		return "", m.ErrorAt(key, "%s is absolute (%s)", p, outsideHint)
	}
	rel := filepath.Clean(p)
	if !filepath.IsLocal(rel) {
		return "", m.ErrorAt(key, "%s leaves the manifest's directory (%s)", p, outsideHint)
	}
	return rel, nil
}

// pathErr says why os.Root refused a path, without the operation's name.
func pathErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if err.Error() == "path escapes from parent" {
		return "leaves the manifest's directory through a symbolic link"
	}
	return err.Error()
}

// valueRE matches what a decoder quotes of the text it read: `…` (YAML's values), "…"
// (TOML's, and %q anywhere) and '…' of two characters or more (YAML's anchors, TOML's
// numbers; a single quoted character is the decoder's own word: "expected '-'").
var valueRE = regexp.MustCompile("`[^`]*`|\"(?:[^\"\\\\]|\\\\.)*\"|'[^'\n]{2,}'")

// withoutValues drops the values a decoder's message quotes from the file it read: a
// workflow file may be anything (a symbolic link, a glob that matched more than meant),
// and its bytes do not belong in an error printed or logged. Line and key say where.
func withoutValues(msg string) string {
	return valueRE.ReplaceAllString(msg, "(value)")
}

// errOutside is the refusal of a workflow file opened through the manifest's root.
func errOutside(err error) string {
	return fmt.Sprintf("%s (%s)", pathErr(err), outsideHint)
}
