package testbin

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var hello = Bin{Pkg: "internal/testbin/testdata/hello"}

// A binary is built once per process: concurrent callers get the same file, which a
// later call does not rebuild (same inode, same modification time), and it runs.
func TestBuildOncePerProcess(t *testing.T) {
	t.Cleanup(Cleanup)
	paths := make([]string, 4)
	var wg sync.WaitGroup
	for i := range paths {
		wg.Go(func() { paths[i] = Path(t, hello) })
	}
	wg.Wait()
	for _, p := range paths[1:] {
		if p != paths[0] {
			t.Fatalf("paths %v differ", paths)
		}
	}
	before, err := os.Stat(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(Path(t, hello))
	if err != nil || !os.SameFile(before, after) || !before.ModTime().Equal(after.ModTime()) {
		t.Fatalf("rebuilt: %v %v", before, after)
	}
	out, err := exec.Command(paths[0]).Output()
	if err != nil || string(out) != "hello from testbin\n" {
		t.Fatalf("run: %q %v", out, err)
	}
	if d, _ := Dir(); filepath.Dir(paths[0]) != d || filepath.Base(paths[0]) != "hello" {
		t.Fatalf("built at %s, dir %s", paths[0], d)
	}
}

// Wasm builds for wasip1 (a .wasm file by default), as a reactor with CShared.
func TestBuildWasm(t *testing.T) {
	t.Cleanup(Cleanup)
	p := Path(t, Bin{Pkg: hello.Pkg, Wasm: true, CShared: true})
	b, err := os.ReadFile(p)
	if err != nil || !bytes.HasPrefix(b, []byte("\x00asm")) || filepath.Base(p) != "hello.wasm" {
		t.Fatalf("%s: %d bytes, %v", p, len(b), err)
	}
}

// A package that does not build is an error naming it, given to every caller, and
// Cleanup removes the directory with what was built.
func TestBuildFailureAndCleanup(t *testing.T) {
	t.Cleanup(Cleanup)
	missing := Bin{Pkg: "internal/testbin/testdata/no-such-package"}
	_, err1 := Build(missing)
	_, err2 := Build(missing)
	if err1 == nil || err1 != err2 || !strings.Contains(err1.Error(), "build internal/testbin/testdata/no-such-package") {
		t.Fatalf("errors %v / %v", err1, err2)
	}
	p := Path(t, hello)
	Cleanup()
	if _, err := os.Stat(filepath.Dir(p)); !os.IsNotExist(err) {
		t.Fatalf("after Cleanup: %v", err)
	}
}
