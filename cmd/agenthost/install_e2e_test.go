package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A user who installs with `go install` and works in a directory of their own: init
// writes a manifest that runs there, the adapters are found next to the binary (not on
// PATH, not under bin/), and version names the commit.
func TestE2E_GoInstallThenInitAndRunOutsideTheRepo(t *testing.T) {
	gobin := t.TempDir()
	// -trimpath and CGO_ENABLED=0 as `make build`: what is tested (where the adapters are
	// found, the commit in version) does not depend on them, and with them the install
	// links packages the build cache holds instead of compiling the tree again.
	install := exec.Command("go", "install", "-buildvcs=auto", "-trimpath", "./cmd/...")
	install.Dir = repoRoot
	install.Env = append(os.Environ(), "GOBIN="+gobin, "CGO_ENABLED=0")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install: %v\n%s", err, out)
	}
	for _, b := range []string{"agenthost", "agenthost-provider-openai", "agenthost-provider-scripted"} {
		if _, err := os.Stat(filepath.Join(gobin, b)); err != nil {
			t.Fatalf("go install ./cmd/... did not install %s", b)
		}
	}
	work := t.TempDir()
	run := func(args ...string) (string, string, int) {
		cmd := exec.Command(filepath.Join(gobin, "agenthost"), args...)
		cmd.Dir = work
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + work} // no GOBIN on PATH, no OPENAI_*
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}
	if _, errs, code := run("init"); code != 0 {
		t.Fatalf("init: %d %s", code, errs)
	}
	out, errs, code := run("run", "--provider", "scripted", "hello")
	if code != 0 || !strings.Contains(out, "Hello from the scripted provider.") {
		t.Fatalf("run: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(work, ".agenthost", "sessions.db")); err != nil {
		t.Fatalf("the session store is not beside the manifest: %v", err)
	}
	out, _, _ = run("version")
	if !strings.HasPrefix(out, "agenthost ") || !strings.Contains(out, " go1.") {
		t.Fatalf("version: %q", out)
	}
	if rev, err := exec.Command("git", "-C", repoRoot, "rev-parse", "HEAD").Output(); err == nil {
		if want := "commit " + string(rev[:12]); !strings.Contains(out, want) {
			t.Fatalf("version %q does not name %s", out, want)
		}
	}
}
