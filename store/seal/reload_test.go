package seal_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/store/seal"
)

func newKey(t *testing.T) string {
	t.Helper()
	k, err := seal.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func writeKeys(t *testing.T, path string, mode os.FileMode, lines ...string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func load(t *testing.T, path string) *seal.Keys {
	t.Helper()
	k, err := seal.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A serving process whose ring lacks the key another process (rotate-key) now seals with
// reads its key file once more and opens the value; from then on it seals with the new
// key too, and so does every copy of its ring (a store's strict copy).
func TestAValueUnderAKeyAddedToTheFileOpensAfterOneReload(t *testing.T) {
	k1, k2 := newKey(t), newKey(t)
	path := filepath.Join(t.TempDir(), "store.key")
	writeKeys(t, path, 0o600, k1)
	serving := load(t, path)
	strict := serving.Strict()
	newer := ring(t, k2, k1)
	v := newer.Seal([]byte(`"hello"`), []byte("row"))
	writeKeys(t, path, 0o600, k2, k1)
	got, err := strict.Open(v, []byte("row"))
	if err != nil || string(got) != `"hello"` {
		t.Fatalf("open after the file gained the key: %q %v", got, err)
	}
	if seal.Reads(serving) != 1 || serving.Current() != newer.Current() || strict.Current() != newer.Current() {
		t.Fatalf("reads %d, sealing with %s/%s, want one read and %s", seal.Reads(serving), serving.Current(), strict.Current(), newer.Current())
	}
	if _, err := strict.Open([]byte(`"plain"`), nil); !errors.Is(err, seal.ErrNotSealed) {
		t.Fatalf("the strict copy lost its strictness on reload: %v", err)
	}
}

// Many readers meeting a key nobody holds cause one file read, not one each, and not one
// per value until the gap has passed; the gap is per key id; an operator's Reload is not
// rate-limited.
func TestUnknownKeyReloadsAreSingleFlightAndRateLimited(t *testing.T) {
	k1, k9 := newKey(t), newKey(t)
	path := filepath.Join(t.TempDir(), "store.key")
	writeKeys(t, path, 0o600, k1)
	serving := load(t, path)
	seal.SetReloadGap(serving, time.Hour)
	v := ring(t, k9).Seal([]byte(`1`), []byte("row"))
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := serving.Open(v, []byte("row"))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, seal.ErrUnknownKey) || !strings.Contains(err.Error(), path) {
			t.Fatalf("unknown key: %v", err)
		}
	}
	if n := seal.Reads(serving); n != 1 {
		t.Fatalf("50 readers read the key file %d times, want 1", n)
	}
	writeKeys(t, path, 0o600, k1, k9)
	if _, err := serving.Open(v, []byte("row")); !errors.Is(err, seal.ErrUnknownKey) || seal.Reads(serving) != 1 {
		t.Fatalf("within the gap: %v after %d reads", err, seal.Reads(serving))
	}
	// The gap is per key id: a value under another key the ring lacks (the next
	// rotation's, moments later) reads the file at once, and so finds k9 too.
	k8 := newKey(t)
	writeKeys(t, path, 0o600, k8, k1, k9)
	w := ring(t, k8).Seal([]byte(`2`), []byte("row"))
	if got, err := serving.Open(w, []byte("row")); err != nil || string(got) != "2" || seal.Reads(serving) != 2 {
		t.Fatalf("another unknown key within the gap: %q %v after %d reads, want it read at once", got, err, seal.Reads(serving))
	}
	if err := serving.Reload(); err != nil {
		t.Fatal(err)
	}
	if got, err := serving.Open(v, []byte("row")); err != nil || string(got) != "1" {
		t.Fatalf("after Reload: %q %v", got, err)
	}
	if err := ring(t, k1).Reload(); !errors.Is(err, seal.ErrFixedRing) {
		t.Fatalf("reloading a ring from the environment: %v", err)
	}
}

// Hostile key files: the file overwritten with garbage, the link swapped to a file others
// can read, a directory, a device, a dangling target, a huge file. Each is a clear error,
// and the ring in use stays: old values open, new ones are sealed with the same key. A
// value under a key the ring lacks names the failed reading. A good swap is taken.
func TestAGarbageOrSwappedKeyFileKeepsTheRingInUse(t *testing.T) {
	k1, k2 := newKey(t), newKey(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "a.key")
	writeKeys(t, good, 0o600, k1)
	link := filepath.Join(dir, "store.key")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	serving := load(t, link)
	seal.SetReloadGap(serving, 0)
	old := serving.Seal([]byte(`"kept"`), []byte("row"))
	swap := func(target string) {
		t.Helper()
		tmp := link + ".new"
		if err := os.Symlink(target, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, link); err != nil {
			t.Fatal(err)
		}
	}
	open := filepath.Join(dir, "open.key")
	writeKeys(t, open, 0o644, k2, k1)
	huge := filepath.Join(dir, "huge.key")
	writeKeys(t, huge, 0o600, k2+"\n#"+strings.Repeat("x", 70<<10))
	garbage := filepath.Join(dir, "garbage.key")
	if err := os.WriteFile(garbage, []byte("\x00\xff not a key \xfe\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, target, want string
	}{
		{"garbage", garbage, "want ID:BASE64KEY"},
		{"readable by others", open, "readable by others"},
		{"a directory", dir, "not a regular file"},
		{"a device", "/dev/zero", "not a regular file"},
		{"dangling", filepath.Join(dir, "gone.key"), "no such file"},
		{"huge", huge, "not a key file"},
	}
	under2 := ring(t, k2, k1).Seal([]byte(`"new"`), []byte("row"))
	for _, c := range cases {
		swap(c.target)
		err := serving.Reload()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: reload answered %v, want %q", c.name, err, c.want)
		}
		if got, err := serving.Open(old, []byte("row")); err != nil || string(got) != `"kept"` || serving.Current() != ring(t, k1).Current() {
			t.Fatalf("%s: the ring in use was not kept: %q %v, sealing with %s", c.name, got, err, serving.Current())
		}
		if _, err := serving.Open(under2, []byte("row")); !errors.Is(err, seal.ErrUnknownKey) || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: a value under a key the ring lacks: %v", c.name, err)
		}
	}
	writeKeys(t, filepath.Join(dir, "b.key"), 0o600, k2, k1)
	swap(filepath.Join(dir, "b.key"))
	if got, err := serving.Open(under2, []byte("row")); err != nil || string(got) != `"new"` {
		t.Fatalf("a good swap: %q %v", got, err)
	}
}

// Watch notices a changed key file and a signal, and says when a reading failed.
func TestWatchReloadsOnAChangedFileAndOnSignal(t *testing.T) {
	k1, k2, k3 := newKey(t), newKey(t), newKey(t)
	path := filepath.Join(t.TempDir(), "store.key")
	writeKeys(t, path, 0o600, k1)
	serving := load(t, path)
	said := make(chan string, 16)
	sig := make(chan os.Signal, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		serving.Watch(ctx, 5*time.Millisecond, sig, func(f string, a ...any) { said <- fmt.Sprintf(f, a...) })
	}()
	defer func() { cancel(); <-done }()
	wait := func(want string) string {
		t.Helper()
		select {
		case s := <-said:
			if !strings.Contains(s, want) {
				t.Fatalf("watch said %q, want %q", s, want)
			}
			return s
		case <-time.After(30 * time.Second):
			t.Fatalf("watch said nothing, waiting for %q", want)
		}
		return ""
	}
	writeKeys(t, path, 0o600, k2, k1)
	wait("the key file changed")
	if serving.Current() != ring(t, k2).Current() {
		t.Fatalf("sealing with %s after the file changed", serving.Current())
	}
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	wait("keeping the ring in use")
	if serving.Current() != ring(t, k2).Current() {
		t.Fatal("garbage replaced the ring")
	}
	// A signal reads the file even if it looks unchanged (same size and time).
	writeKeys(t, path, 0o600, k3, k2)
	sig <- syscall.SIGHUP
	for s := wait("store keys"); !strings.Contains(s, "sealing with "+ring(t, k3).Current()); s = wait("store keys") {
	}
}
