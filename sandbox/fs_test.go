package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The filesystem rules (hole 1 of the security review): every operation of
// a guest resolves inside its mount in one step, a guest cannot plant a
// symlink that leads out, and a read-only mount refuses every write.

// fsTree is a mount (data), a read-only mount (ro) and a secret next to
// them, with the plugin "guest" mounting /data and /ro.
type fsTree struct {
	base, data, ro, secretDir, secret string
	p                                 *Plugin
}

func newFSTree(t *testing.T) *fsTree {
	t.Helper()
	base := t.TempDir()
	ft := &fsTree{base: base, data: filepath.Join(base, "data"), ro: filepath.Join(base, "ro"),
		secretDir: filepath.Join(base, "secret")}
	ft.secret = filepath.Join(ft.secretDir, "secret.txt")
	for _, d := range []string{ft.data, ft.ro, ft.secretDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, ft.secret, "top secret")
	writeFile(t, filepath.Join(ft.data, "ok.txt"), "granted")
	writeFile(t, filepath.Join(ft.ro, "ro.txt"), "read only")
	ft.p = loadGuest(t, newTestRuntime(t), Permissions{Timeout: 20 * time.Second,
		AllowedPaths: map[string]string{ft.data: "/data", "ro:" + ft.ro: "/ro"}}, nil)
	return ft
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (ft *fsTree) op(t *testing.T, op, path, to string) CallResult {
	t.Helper()
	args, _ := json.Marshal(map[string]any{"op": op, "path": path, "to": to})
	return callTool(t, ft.p, "fsop", string(args))
}

// wantFail checks an operation failed with the errno text the guest's libc
// (Go's wasip1 syscall package) prints.
func (ft *fsTree) wantFail(t *testing.T, op, path, to, errText string) {
	t.Helper()
	res := ft.op(t, op, path, to)
	text := strings.TrimSuffix(res.Text(), " "+ft.p.fsNote()) // fshint.go
	if !res.IsError || !strings.HasSuffix(text, ": "+errText) {
		t.Errorf("%s %s %s: got isError=%v %q, want the error %q", op, path, to, res.IsError, res.Text(), errText)
	}
}

// secretUntouched checks the secret directory holds exactly the secret.
func (ft *fsTree) secretUntouched(t *testing.T) {
	t.Helper()
	ents, err := os.ReadDir(ft.secretDir)
	if err != nil || len(ents) != 1 || ents[0].Name() != "secret.txt" {
		t.Fatalf("secret directory changed: %v %v", ents, err)
	}
	if b, _ := os.ReadFile(ft.secret); string(b) != "top secret" {
		t.Fatalf("secret changed: %q", b)
	}
}

// TestFSRaceSymlinkFlipCannotEscape is the reproduction of hole 1: one call
// flips /data/d between a directory and a relative symlink to ../secret
// while a parallel call of the same plugin reads and appends to
// /data/d/secret.txt. With a check-then-open filesystem the second call
// sometimes lands outside the mount.
func TestFSRaceSymlinkFlipCannotEscape(t *testing.T) {
	ft := newFSTree(t)
	if err := os.Mkdir(filepath.Join(ft.data, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	const rounds, perCall = 20, 250 // 5,000 flips against 5,000 probes
	var wg sync.WaitGroup
	var mu sync.Mutex
	var seen []string
	call := func(args string) {
		defer wg.Done()
		for i := 0; i < rounds; i++ {
			res, err := ft.p.InvokeTool(context.Background(), "fsop", []byte(args))
			if err != nil || res.IsError {
				t.Errorf("%s: %v %v", args, res, err)
				return
			}
			mu.Lock()
			seen = append(seen, res.Text())
			mu.Unlock()
		}
	}
	wg.Add(2)
	go call(fmt.Sprintf(`{"op":"flip","path":"/data/d","to":"../secret","n":%d}`, perCall))
	go call(fmt.Sprintf(`{"op":"probe","path":"/data/d/secret.txt","n":%d}`, perCall))
	wg.Wait()
	for _, s := range seen {
		if strings.Contains(s, "top secret") {
			t.Fatalf("a call read the secret outside the mount: %q", s)
		}
	}
	ft.secretUntouched(t)
}

func TestFSGuestSymlinkOutOfMountRefused(t *testing.T) {
	ft := newFSTree(t)
	const eperm = "Operation not permitted"
	ft.wantFail(t, "symlink", "/data/esc", "../secret", eperm)
	ft.wantFail(t, "symlink", "/data/esc", "../secret/secret.txt", eperm)
	ft.wantFail(t, "symlink", "/data/esc", "..", eperm)
	ft.wantFail(t, "symlink", "/data/esc", ft.secret, eperm)
	ft.wantFail(t, "symlink", "/data/esc", "/data/ok.txt", eperm) // absolute: a host path to the host
	if res := ft.op(t, "mkdir", "/data/sub", ""); res.IsError {
		t.Fatal(res.Text())
	}
	ft.wantFail(t, "symlink", "/data/sub/esc", "../../secret", eperm)
	ft.wantFail(t, "symlink", "/data/sub/esc", "x/../../../secret", eperm)
	// A target that climbs is refused even where it would stay inside today:
	// renaming sub to the top of the mount (or swapping a directory on its
	// path) would make "../ok.txt" lead out.
	ft.wantFail(t, "symlink", "/data/sub/up", "../ok.txt", eperm)
	ft.wantFail(t, "symlink", "/data/sub/up", "x/../../ok.txt", eperm)
	// Nothing was created.
	for _, name := range []string{"esc", "sub/esc", "sub/up"} {
		if _, err := os.Lstat(filepath.Join(ft.data, name)); !os.IsNotExist(err) {
			t.Fatalf("%s exists: %v", name, err)
		}
	}
	// Links that descend work, are followed, and stay inside wherever they or
	// their directories are moved.
	if err := os.WriteFile(filepath.Join(ft.data, "sub", "in.txt"), []byte("inner"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantResult(t, ft.op(t, "symlink", "/data/sub/down", "./in.txt"), false, "ok")
	wantResult(t, ft.op(t, "read", "/data/sub/down", ""), false, "inner")
	wantResult(t, ft.op(t, "readlink", "/data/sub/down", ""), false, "./in.txt")
	wantResult(t, ft.op(t, "symlink", "/data/alias", "sub"), false, "ok")
	wantResult(t, ft.op(t, "read", "/data/alias/down", ""), false, "inner")
	wantResult(t, ft.op(t, "mkdir", "/data/deep", ""), false, "ok")
	wantResult(t, ft.op(t, "rename", "/data/sub", "/data/deep/sub"), false, "ok")
	wantResult(t, ft.op(t, "read", "/data/deep/sub/down", ""), false, "inner")
	wantResult(t, ft.op(t, "link", "/data/deep/sub/down", "/data/hard"), false, "ok")
	wantResult(t, ft.op(t, "readlink", "/data/hard", ""), false, "./in.txt")
	ft.secretUntouched(t)
}

func TestFSEscapesRefused(t *testing.T) {
	ft := newFSTree(t)
	// Symlinks planted on the host (by anyone) are not followed out.
	if err := os.Symlink(ft.secret, filepath.Join(ft.data, "abs")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../secret", filepath.Join(ft.data, "up")); err != nil {
		t.Fatal(err)
	}
	const eperm = "Operation not permitted"
	for _, op := range []string{"read", "stat", "append", "chtimes", "truncate"} {
		ft.wantFail(t, op, "/data/abs", "x", eperm)
		ft.wantFail(t, op, "/data/up/secret.txt", "x", eperm)
	}
	ft.wantFail(t, "readdir", "/data/up", "", eperm)
	ft.wantFail(t, "write", "/data/up/new.txt", "x", eperm)
	ft.wantFail(t, "mkdir", "/data/up/dir", "", eperm)
	ft.wantFail(t, "remove", "/data/up/secret.txt", "", eperm)
	ft.wantFail(t, "rename", "/data/ok.txt", "/data/up/moved.txt", eperm)
	ft.wantFail(t, "rename", "/data/up/secret.txt", "/data/stolen.txt", eperm)
	ft.wantFail(t, "link", "/data/up/secret.txt", "/data/hard", eperm)
	ft.wantFail(t, "link", "/data/ok.txt", "/data/up/hard", eperm)
	ft.wantFail(t, "symlink", "/data/up/l", "secret.txt", eperm)
	// ".." above the mount never reaches a host path.
	ft.wantFail(t, "read", "/data/../secret/secret.txt", "", "Bad file number")
	ft.wantFail(t, "rename", "/data/ok.txt", "/data/../moved.txt", "Bad file number")
	// The symlinks themselves can be looked at and removed: they are inside.
	wantResult(t, ft.op(t, "readlink", "/data/up", ""), false, "../secret")
	wantResult(t, ft.op(t, "remove", "/data/abs", ""), false, "ok")
	ft.secretUntouched(t)
	if b, _ := os.ReadFile(filepath.Join(ft.data, "ok.txt")); string(b) != "granted" {
		t.Fatalf("ok.txt changed: %q", b)
	}
}

func TestFSReadOnlyMountRefusesEveryWrite(t *testing.T) {
	ft := newFSTree(t)
	const erofs = "Read-only file system"
	ft.wantFail(t, "write", "/ro/ro.txt", "x", erofs)
	ft.wantFail(t, "write", "/ro/new.txt", "x", erofs)
	ft.wantFail(t, "append", "/ro/ro.txt", "x", erofs)
	ft.wantFail(t, "truncate", "/ro/ro.txt", "", erofs)
	ft.wantFail(t, "mkdir", "/ro/dir", "", erofs)
	ft.wantFail(t, "remove", "/ro/ro.txt", "", erofs)
	ft.wantFail(t, "rename", "/ro/ro.txt", "/ro/moved.txt", erofs)
	ft.wantFail(t, "link", "/ro/ro.txt", "/ro/hard", erofs)
	ft.wantFail(t, "symlink", "/ro/l", "ro.txt", erofs)
	ft.wantFail(t, "chtimes", "/ro/ro.txt", "", erofs)
	wantResult(t, ft.op(t, "read", "/ro/ro.txt", ""), false, "read only")
	wantResult(t, ft.op(t, "readdir", "/ro", ""), false, "ro.txt:----------")
	ents, _ := os.ReadDir(ft.ro)
	if len(ents) != 1 {
		t.Fatalf("read-only mount changed: %v", ents)
	}
	fi, _ := os.Stat(filepath.Join(ft.ro, "ro.txt"))
	if fi.ModTime().Unix() == 1e9 {
		t.Fatal("chtimes reached the read-only mount")
	}
}

// TestFSOperationsInsideTheMount checks the WASI calls still behave as
// POSIX says inside a writable mount.
func TestFSOperationsInsideTheMount(t *testing.T) {
	ft := newFSTree(t)
	steps := []struct{ op, path, to, want string }{
		{"mkdir", "/data/dir", "", "ok"},
		{"write", "/data/dir/a.txt", "alpha", "ok"},
		{"append", "/data/dir/a.txt", "+", "ok"},
		{"read", "/data/dir/a.txt", "", "alpha+"},
		{"stat", "/data/dir/a.txt", "", "-rw------- 6"},
		{"link", "/data/dir/a.txt", "/data/dir/hard.txt", "ok"},
		{"symlink", "/data/dir/soft", "a.txt", "ok"},
		{"lstat", "/data/dir/soft", "", "Lrw-------"},
		{"read", "/data/dir/soft", "", "alpha+"},
		{"rename", "/data/dir/a.txt", "/data/b.txt", "ok"},
		{"readdir", "/data/dir", "", "hard.txt:----------,soft:L---------"},
		{"truncate", "/data/b.txt", "", "ok"},
		{"read", "/data/b.txt", "", ""},
		{"chtimes", "/data/b.txt", "", "ok"},
		{"remove", "/data/dir/soft", "", "ok"},
		{"remove", "/data/dir/hard.txt", "", "ok"},
		{"remove", "/data/dir", "", "ok"},
	}
	for _, s := range steps {
		want := s.want
		if want == "" {
			want = "ok"
		}
		wantResult(t, ft.op(t, s.op, s.path, s.to), false, want)
	}
	fi, err := os.Stat(filepath.Join(ft.data, "b.txt"))
	if err != nil || fi.ModTime().Unix() != 1e9 || fi.Size() != 0 {
		t.Fatalf("b.txt: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(ft.data, "dir")); !os.IsNotExist(err) {
		t.Fatalf("dir still exists: %v", err)
	}
	ft.wantFail(t, "remove", "/data/nothing", "", "No such file or directory")
	ft.wantFail(t, "mkdir", "/data/ok.txt", "", "File exists")
}
