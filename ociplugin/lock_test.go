package ociplugin

import (
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

func digest(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }

// A lock is written in one order whatever order its entries came in, with a comment
// saying what it is, and reads back as written.
func TestLockIsWrittenOrderedAndReadsBack(t *testing.T) {
	dir := t.TempDir()
	l, err := ReadLock(LockPath(filepath.Join(dir, "agent.toml")))
	if err != nil || l.Exists || l.File != filepath.Join(dir, "agent.lock") {
		t.Fatalf("a lock that is not there: %+v %v", l, err)
	}
	entries := []LockEntry{
		{Ref: "oci://127.0.0.1:5000/plugins/zeta:1", Manifest: digest('a'), Module: digest('b')},
		{Ref: "oci://127.0.0.1:5000/plugins/alpha:1", Manifest: digest('c'), Module: digest('d')},
	}
	if err := l.Write(entries); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(l.File)
	want := lockHeader + `version = 1

[[plugin]]
ref = "oci://127.0.0.1:5000/plugins/alpha:1"
manifest = "` + digest('c') + `"
module = "` + digest('d') + `"

[[plugin]]
ref = "oci://127.0.0.1:5000/plugins/zeta:1"
manifest = "` + digest('a') + `"
module = "` + digest('b') + `"
`
	if string(got) != want {
		t.Fatalf("lock file:\n%s\nwant:\n%s", got, want)
	}
	back, err := ReadLock(l.File)
	if err != nil || !back.Exists || !back.Holds([]LockEntry{entries[1], entries[0]}) || back.Holds(entries[:1]) {
		t.Fatalf("read back: %+v %v", back, err)
	}
	if fi, _ := os.Stat(l.File); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644 (the lock is committed)", fi.Mode())
	}
	if LockPath("deploy/prod.toml") != "deploy/prod.lock" || LockPath("agent") != "agent.lock" || LockPath("x.lock") != "x.lock.lock" {
		t.Error("LockPath")
	}
}

// A lock that does not read strictly is an error naming the file and the problem; it is
// never taken for an empty one.
func TestLockThatDoesNotReadIsAnError(t *testing.T) {
	ok := `ref = "oci://h/p:1"` + "\nmanifest = \"" + digest('a') + "\"\nmodule = \"" + digest('b') + "\"\n"
	for body, want := range map[string]string{
		"version = 1\n[[plugin]]\n" + ok + "extra = 1\n": "unknown key plugin.extra",
		"version = 2\n": "version 2, this agenthost reads version 1",
		"version = 1\n[[plugin]]\n" + ok + "[[plugin]]\n" + ok: "oci://h/p:1 is there twice",
		"version = 1\n[[plugin]]\nref = \"oci://h/p:1\"\n":     "manifest and module must be sha256:<64 hex digits>",
		"version = 1\n[[plugin]]\nmanifest = \"x\"\n":          "plugin 1 has no ref",
		"version = 1\n[[plugin]\n":                             "toml:",
	} {
		p := filepath.Join(t.TempDir(), "agent.lock")
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := ReadLock(p); err == nil || !strings.HasPrefix(err.Error(), p+": ") || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v (want %q)", body, err, want)
		}
	}
}

// Check refuses a reference the lock lacks or holds with other digests, naming the
// reference and both digests.
func TestLockCheckNamesTheReferenceAndBothDigests(t *testing.T) {
	locked := LockEntry{Ref: "oci://h/p:1", Manifest: digest('a'), Module: digest('b')}
	moved := LockEntry{Ref: "oci://h/p:1", Manifest: digest('c'), Module: digest('d')}
	l := &Lock{File: "agent.lock", Exists: true, Plugins: []LockEntry{locked}}
	if err := l.Check(locked); err != nil {
		t.Fatalf("the locked digests: %v", err)
	}
	err := l.Check(moved)
	var le *LockError
	if !errors.As(err, &le) || le.Locked == nil || *le.Locked != locked || le.Resolved != moved {
		t.Fatalf("moved: %#v", err)
	}
	le.Plugin = "calc"
	want := `--locked: plugin "calc" (oci://h/p:1) resolved to module ` + digest('d') + ` (manifest ` + digest('c') + `), but agent.lock has module ` +
		digest('b') + ` (manifest ` + digest('a') + `); if the change is expected, run once without --locked to record it`
	if le.Error() != want {
		t.Fatalf("moved:\n got %s\nwant %s", le.Error(), want)
	}
	other := LockEntry{Ref: "oci://h/p:2", Manifest: digest('c'), Module: digest('d')}
	if err := l.Check(other); err == nil || err.Error() != `--locked: oci://h/p:2 is not in agent.lock (it resolved to module `+digest('d')+` (manifest `+digest('c')+`)); run once without --locked to record it` {
		t.Fatalf("missing: %v", err)
	}
	none := &Lock{File: "agent.lock"}
	if err := none.Check(other); err == nil || !strings.HasPrefix(err.Error(), "--locked: oci://h/p:2 is not in agent.lock, which does not exist") {
		t.Fatalf("no lock: %v", err)
	}
}

// PullWith shows Check the digests before anything is fetched: a refused module is
// neither read nor cached, and the error is Check's as it is.
func TestPullCheckRunsBeforeTheModuleIsFetched(t *testing.T) {
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	ref := "oci://" + strings.TrimPrefix(reg.URL, "http://") + "/plugins/m:1"
	mod := []byte("\x00asm\x01\x00\x00\x00")
	manifest, err := Push(mod, ref, "")
	if err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(t.TempDir(), "oci")
	refused := errors.New("refused")
	var seen LockEntry
	_, err = PullWith(ref, PullOptions{Cache: cache, Check: func(e LockEntry) error { seen = e; return refused }})
	want := LockEntry{Ref: ref, Manifest: manifest, Module: "sha256:93a44bbb96c751218e4c00d479e4c14358122a389acca16205b1e4d0dc5f9476"}
	if err != refused || seen != want {
		t.Fatalf("err %v, check saw %+v, want %+v", err, seen, want)
	}
	if _, err := os.Stat(cache); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the cache was made for a refused module: %v", err)
	}
	p, err := PullWith(ref, PullOptions{Cache: cache, Check: func(LockEntry) error { return nil }})
	if err != nil || "sha256:"+p.ModuleDigest != want.Module || p.ManifestDigest != manifest {
		t.Fatalf("pull: %+v %v", p, err)
	}
}
