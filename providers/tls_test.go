package providers

import (
	"os"
	"path/filepath"
	"testing"
)

// TLS is dropped only for a socket directory private to this user; anything else keeps
// AutoMTLS.
func TestTLSIsDroppedOnlyForADirectoryPrivateToThisUser(t *testing.T) {
	dir, err := os.MkdirTemp(t.TempDir(), "sock-")
	if err != nil {
		t.Fatal(err)
	}
	if needTLS(dir) {
		t.Fatal("a fresh MkdirTemp directory (0700, ours) should not need TLS")
	}
	for _, mode := range []os.FileMode{0o750, 0o705, 0o777, 0o710} {
		os.Chmod(dir, mode)
		if !needTLS(dir) {
			t.Errorf("a %o directory must keep TLS", mode)
		}
	}
	os.Chmod(dir, 0o700)
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o600)
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(dir, link)
	for name, p := range map[string]string{"a file": file, "missing": filepath.Join(dir, "nope"), "a symlink to a private directory": link} {
		if !needTLS(p) {
			t.Errorf("%s must keep TLS", name)
		}
	}
	if os.Getuid() != 0 {
		if !needTLS("/") { // root's, not ours
			t.Error("a directory another user owns must keep TLS")
		}
	}
}
