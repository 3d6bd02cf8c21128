package host

import (
	"os"
	"path/filepath"
)

// CacheDirFromEnv is $AGENTHOST_CACHE_DIR made absolute, or "" when it is unset or
// empty. Set, it is the Wasm compilation cache of every host that names none in its
// Options, in place of .agenthost/cache beside the manifest: one cache for many
// manifests (a CI job's cached directory, a container whose manifest directory is
// read-only, a test suite whose every test writes its own manifest). Sharing is safe: an
// entry is keyed by the module's sha256, the runtime's version and the machine, and
// written whole or not at all (a temporary file renamed), so processes that compile the
// same module at once each write the same bytes.
func CacheDirFromEnv() string {
	d := os.Getenv("AGENTHOST_CACHE_DIR")
	if d == "" {
		return ""
	}
	if abs, err := filepath.Abs(d); err == nil {
		return abs
	}
	return d
}
