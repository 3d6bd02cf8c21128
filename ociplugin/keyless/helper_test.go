package keyless

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/ociplugin"
)

// Every check of this package's tests goes through the real helper, built once.
func TestMain(m *testing.M) {
	HelperPath = testbin.Must(testbin.Sigstore)
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// agenthost links none of Sigstore's client: the helper does (helper.go). What the
// separation bought: ~5 MB of the binary and ~2 ms of every start's package init.
func TestAgenthostLinksNoSigstoreClient(t *testing.T) {
	root, err := testbin.Root()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "./cmd/agenthost")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		for _, f := range []string{"github.com/sigstore/sigstore-go", "github.com/sigstore/rekor", "github.com/asaskevich/govalidator", "github.com/go-openapi"} {
			if p == f || strings.HasPrefix(p, f+"/") {
				t.Errorf("agenthost links %s", p)
			}
		}
	}
}

// A helper that is not there, or is something else, is an error saying which and what
// to do; it never reads as a verified (or a refused) signature.
func TestAMissingOrForeignHelperIsAClearError(t *testing.T) {
	k := ociplugin.Keyless{Identity: signer, Issuer: issuer, TrustedRoot: "trusted_root.json"}
	defer func(p string) { HelperPath = p }(HelperPath)

	HelperPath = ""
	exe, _ := os.Executable()
	exe, _ = filepath.EvalSymlinks(exe)
	want := "keyless verification runs in agenthost-sigstore, which is not beside " + exe + "; build it with: go install github.com/agenthost/agenthost/cmd/agenthost-sigstore@latest (make build in a checkout)"
	if err := VerifyBlob(k, []byte("x"), []byte("{}")); err == nil || err.Error() != want {
		t.Errorf("no helper: %v\nwant %s", err, want)
	}
	defer func(d time.Duration) { helperTimeout = d }(helperTimeout)
	helperTimeout = 300 * time.Millisecond
	dir := t.TempDir()
	for _, c := range []struct{ script, want string }{
		{"#!/bin/sh\necho yes\n", "agenthost-sigstore answered something else than its answer: invalid character 'y' looking for beginning of value"},
		{"#!/bin/sh\necho broken >&2\nexit 3\n", "agenthost-sigstore: exit status 3: broken"},
		{"#!/bin/sh\necho '{\"verified\": 5}'\n", "agenthost-sigstore answered bundle 5, not one of the 1 asked"},
		{"#!/bin/sh\necho '{}'\n", "agenthost-sigstore answered for 0 bundles, not the 1 asked"}, // saying nothing is no signature
		{"#!/bin/sh\necho started >&2\nexec sleep 30\n", "agenthost-sigstore: no answer within 300ms (signal: killed): started"},
	} {
		HelperPath = filepath.Join(dir, "helper")
		if err := os.WriteFile(HelperPath, []byte(c.script), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := VerifyBlob(k, []byte("x"), []byte("{}")); err == nil || err.Error() != c.want {
			t.Errorf("%q: %v\nwant %s", c.script, err, c.want)
		}
		os.Remove(HelperPath)
	}
	// Attaching asks which kind of bundle it is: an answer that names none attaches nothing.
	f := newKeylessFixture(t, true)
	HelperPath = filepath.Join(dir, "helper")
	if err := os.WriteFile(HelperPath, []byte("#!/bin/sh\necho '{}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := AttachBundle(f.ref, []byte("{}")); err == nil || !strings.HasSuffix(err.Error(), `: agenthost-sigstore answered no kind of bundle ("")`) {
		t.Errorf("attach with a helper naming no kind: %v", err)
	}
}

// A file or a bundle over the limits is refused before the helper is started.
func TestVerifyBlobRefusesWhatExceedsItsLimitsBeforeStartingTheHelper(t *testing.T) {
	defer func(p string) { HelperPath = p }(HelperPath)
	HelperPath = "/nonexistent/helper" // started, it would fail otherwise
	k := ociplugin.Keyless{Identity: signer, Issuer: issuer, TrustedRoot: "trusted_root.json"}
	if err := VerifyBlob(k, make([]byte, MaxBlob+1), []byte("{}")); err == nil || err.Error() != "a file of 33554433 bytes: a signed file is at most 33554432 (a release's checksums are a few hundred)" {
		t.Errorf("a large file: %v", err)
	}
	if err := VerifyBlob(k, []byte("x"), make([]byte, maxBundle+1)); err == nil || err.Error() != "bundle larger than 1048576 bytes" {
		t.Errorf("a large bundle: %v", err)
	}
}
