package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func wantLoadError(t *testing.T, r *Runtime, cfg Config, want ...string) {
	t.Helper()
	err := returnsBefore(t, sleepBound, func() error {
		p, err := r.Load(context.Background(), cfg)
		if err == nil {
			p.Close(context.Background())
		}
		return err
	})
	if err == nil {
		t.Fatalf("loaded %s", cfg.Path)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("got %q, want it to say %q", err, w)
		}
	}
}

func TestPinnedModuleIsCheckedOnTheBytesItCompiles(t *testing.T) {
	r := newTestRuntime(t)
	pin := sha(fixtures.hostile)
	wantLoadError(t, r, Config{Name: "x", Wasm: fixtures.guest, SHA256: pin, Tools: extismTool("greet")},
		`load plugin "x": digest mismatch for the module bytes: sha256 pins `+pin+`, the module read is `+sha(fixtures.guest))
	path := filepath.Join(t.TempDir(), "p.wasm")
	if err := os.WriteFile(path, fixtures.guest, 0o644); err != nil {
		t.Fatal(err)
	}
	wantLoadError(t, r, Config{Name: "x", Path: path, SHA256: pin, Tools: extismTool("greet")},
		`load plugin "x": digest mismatch for `+path+`: sha256 pins `+pin)
	p := load(t, r, Config{Name: "x", Path: path, SHA256: strings.ToUpper(sha(fixtures.guest)), Tools: extismTool("greet")})
	wantResult(t, callTool(t, p, "greet", `{"text":"pin"}`), false, "Hello, pin!")
}

// A check of the file before Load (the manifest's) and Load's own read are two
// reads: a symlink switched between them must not get the other module compiled.
func TestPinnedModuleSwappedBySymlinkAfterAnEarlierCheckIsRefused(t *testing.T) {
	dir := t.TempDir()
	good, evil, link := filepath.Join(dir, "good.wasm"), filepath.Join(dir, "evil.wasm"), filepath.Join(dir, "p.wasm")
	os.WriteFile(good, fixtures.hostile, 0o644)
	os.WriteFile(evil, fixtures.guest, 0o644)
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	pin := sha(fixtures.hostile)
	if err := VerifyModule(link, pin); err != nil {
		t.Fatalf("the early check: %v", err)
	}
	os.Remove(link)
	if err := os.Symlink(evil, link); err != nil {
		t.Fatal(err)
	}
	wantLoadError(t, newTestRuntime(t), Config{Name: "swapped", Path: link, SHA256: pin, Tools: extismTool("echo")},
		`load plugin "swapped": digest mismatch for `+link)
}

// A FIFO would block a reader until a writer came, and then feed it anything:
// it is refused at once, pinned or not, and so is a directory.
func TestModulePathThatIsNotARegularFileIsRefusedAtOnce(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "p.wasm")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	r := newTestRuntime(t)
	wantLoadError(t, r, Config{Name: "fifo", Path: fifo, SHA256: sha(fixtures.guest)},
		`load plugin "fifo": `+fifo+` is not a regular file (a FIFO)`)
	wantLoadError(t, r, Config{Name: "fifo", Path: fifo}, `load plugin "fifo": `+fifo+` is not a regular file (a FIFO)`)
	wantLoadError(t, r, Config{Name: "dir", Path: dir}, `load plugin "dir": `+dir+` is not a regular file (a directory)`)
	err := returnsBefore(t, sleepBound, func() error { return VerifyModule(fifo, sha(fixtures.guest)) })
	if err == nil || !strings.Contains(err.Error(), "is not a regular file (a FIFO)") {
		t.Fatalf("VerifyModule on a FIFO: %v", err)
	}
}
