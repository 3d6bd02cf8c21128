package main

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// release runs scripts/release.sh for this machine's OS and arch into a new directory.
func release(t *testing.T, version string) string {
	t.Helper()
	out := t.TempDir()
	cmd := exec.Command("bash", "scripts/release.sh")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "TARGETS="+runtime.GOOS+"/"+runtime.GOARCH, "OUT="+out, "VERSION="+version)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release.sh: %v\n%s", err, b)
	}
	return out
}

// Issue 52's release archives: built twice from one commit they are the same bytes, and so
// are their SBOMs; the checksums file names both with their sha256; inside are agenthost and the three
// adapters, stripped (no symbol table, no DWARF) and without this machine's paths, and
// `agenthost version` says the version and commit they were built from; the SBOM
// describes those binaries (checkSBOM); signed keylessly, SHA256SUMS verifies with
// `agenthost verify`, and a tampered archive does not (checkSignedRelease).
func TestE2E_ReleaseArchivesAreReproducibleStrippedAndSayTheirVersion(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the archive is checked as an ELF binary; this test runs on linux")
	}
	const version = "v0.0.0-releasetest"
	name := "agenthost_" + version + "_" + runtime.GOOS + "_" + runtime.GOARCH + ".tar.gz"
	first, second := release(t, version), release(t, version)
	a, err := os.ReadFile(filepath.Join(first, name))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(second, name))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(a)
	if !bytes.Equal(a, b) {
		t.Fatalf("two builds of %s differ: sha256 %x and %x", name, sum, sha256.Sum256(b))
	}
	sbomName := strings.TrimSuffix(name, ".tar.gz") + ".cdx.json"
	sbom, err := os.ReadFile(filepath.Join(first, sbomName))
	if err != nil {
		t.Fatal(err)
	}
	if sbom2, _ := os.ReadFile(filepath.Join(second, sbomName)); !bytes.Equal(sbom, sbom2) {
		t.Fatalf("two builds of %s differ", sbomName)
	}
	sbomSum := sha256.Sum256(sbom)
	sums, _ := os.ReadFile(filepath.Join(first, "SHA256SUMS"))
	if want := hex.EncodeToString(sum[:]) + "  " + name + "\n" + hex.EncodeToString(sbomSum[:]) + "  " + sbomName + "\n"; string(sums) != want {
		t.Fatalf("SHA256SUMS:\n%s\nwant\n%s", sums, want)
	}

	dir := t.TempDir()
	if out, err := exec.Command("tar", "-xzf", filepath.Join(first, name), "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	root := filepath.Join(dir, strings.TrimSuffix(name, ".tar.gz"))
	for _, bin := range []string{"agenthost", "agenthost-provider-scripted", "agenthost-provider-openai", "agenthost-provider-anthropic", "agenthost-sigstore"} {
		p := filepath.Join(root, bin)
		f, err := elf.Open(p)
		if err != nil {
			t.Fatalf("%s: %v", bin, err)
		}
		for _, s := range []string{".symtab", ".debug_info", ".zdebug_info"} {
			if f.Section(s) != nil {
				t.Errorf("%s is not stripped: it has %s", bin, s)
			}
		}
		f.Close()
		raw, _ := os.ReadFile(p)
		if bytes.Contains(raw, []byte(repoRoot)) {
			t.Errorf("%s holds this machine's path %s (built without -trimpath?)", bin, repoRoot)
		}
	}
	head, err := exec.Command("git", "-C", repoRoot, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(root, "agenthost"), "version").Output()
	if want := "agenthost " + version + " (commit " + string(head[:12]) + ") go"; err != nil || !strings.HasPrefix(string(out), want) {
		t.Fatalf("agenthost version: %v %q, want %q...", err, out, want)
	}
	if _, err := os.Stat(filepath.Join(root, "BUILDINFO.json")); err != nil {
		t.Fatal(err)
	}
	checkSBOM(t, filepath.Join(first, sbomName), version, root)
	checkSignedRelease(t, first, name, sbomName)
}
