package providers_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/providers"
)

// impostor is what an attacker swaps in after the check: if it ran, Start would fail
// with its exit status and the marker in its stderr.
const impostor = "#!/bin/sh\necho IMPOSTOR-RAN >&2\nexit 7\n"

// pinnedSetup copies the real adapter into a fresh directory, writes the impostor beside
// it and points TMPDIR at an empty directory, so the private copies can be counted.
func pinnedSetup(t *testing.T) (dir, adapter, fake, pin, tmp string) {
	t.Helper()
	dir = t.TempDir()
	data, err := os.ReadFile(scriptedBin)
	if err != nil {
		t.Fatal(err)
	}
	adapter = filepath.Join(dir, "adapter")
	fake = filepath.Join(dir, "impostor")
	if err := os.WriteFile(adapter, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fake, []byte(impostor), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp = t.TempDir()
	t.Setenv("TMPDIR", tmp)
	return dir, adapter, fake, fmt.Sprintf("%x", sha256.Sum256(data)), tmp
}

// startPinnedWithSwap starts command pinned to pin, running swap between the
// verification and the start, and checks the verified adapter answers.
func startPinnedWithSwap(t *testing.T, command, pin string, swap func()) *providers.Client {
	t.Helper()
	t.Cleanup(providers.SetAfterVerify(func(string) { swap() }))
	var stderr lockedBuffer
	c, err := providers.Start(context.Background(), providers.ClientConfig{Name: "pinned", Command: command, SHA256: pin, Stderr: &stderr})
	if err != nil {
		t.Fatalf("Start after the swap: %v (the swapped-in file ran?)", err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Info(context.Background()); err != nil {
		t.Fatalf("Info: %v", err)
	}
	if strings.Contains(stderr.String(), "IMPOSTOR-RAN") {
		t.Fatal("the swapped-in file ran")
	}
	return c
}

// lockedBuffer collects an adapter's stderr, which go-plugin writes from its own goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runningExe is the file the adapter process was executed from.
func runningExe(t *testing.T, c *providers.Client) string {
	t.Helper()
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", c.PID()))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	return exe
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestPinnedAdapterRenamedOverAfterVerifyRunsTheVerifiedBytes: a file renamed over the
// pinned path between the check and the start does not run; the checked bytes do, from a
// private copy that Close removes. A restart checks the path again and refuses the
// impostor.
func TestPinnedAdapterRenamedOverAfterVerifyRunsTheVerifiedBytes(t *testing.T) {
	_, adapter, fake, pin, tmp := pinnedSetup(t)
	c := startPinnedWithSwap(t, adapter, pin, func() {
		if err := os.Rename(fake, adapter); err != nil {
			t.Error(err)
		}
	})
	exe := runningExe(t, c)
	if !strings.HasPrefix(exe, tmp+string(os.PathSeparator)) {
		t.Fatalf("adapter runs from %s, want a private copy under %s", exe, tmp)
	}
	if fi, err := os.Stat(filepath.Dir(exe)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("copy's directory: %v, %v; want mode 0700", fi.Mode(), err)
	}

	providers.SetAfterVerify(nil)
	syscall.Kill(c.PID(), syscall.SIGKILL)
	deadline := time.Now().Add(10 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		if _, err = c.Info(context.Background()); err != nil && strings.Contains(err.Error(), "restart adapter") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err == nil || !strings.Contains(err.Error(), "sha256 mismatch for "+adapter) {
		t.Fatalf("restart with the impostor in place: %v", err)
	}

	c.Close()
	if left := entries(t, tmp); len(left) != 0 {
		t.Fatalf("private copies left after Close: %v", left)
	}
}

// TestPinnedAdapterSymlinkRepointedAfterVerifyRunsTheVerifiedBytes: the same for a
// command that is a symlink re-pointed at another file after the check.
func TestPinnedAdapterSymlinkRepointedAfterVerifyRunsTheVerifiedBytes(t *testing.T) {
	dir, adapter, fake, pin, _ := pinnedSetup(t)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(adapter, link); err != nil {
		t.Fatal(err)
	}
	c := startPinnedWithSwap(t, link, pin, func() {
		tmpLink := link + ".new"
		if err := os.Symlink(fake, tmpLink); err != nil {
			t.Error(err)
		}
		if err := os.Rename(tmpLink, link); err != nil {
			t.Error(err)
		}
	})
	if exe := runningExe(t, c); exe == adapter || exe == fake {
		t.Fatalf("adapter runs from %s, not from a private copy", exe)
	}
}

// TestPinnedAdapterThatIsAFIFOIsRefusedAtOnce: a named pipe at the pinned path is
// refused with a clear error instead of the check waiting for a writer forever.
func TestPinnedAdapterThatIsAFIFOIsRefusedAtOnce(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "adapter")
	if err := syscall.Mkfifo(fifo, 0o700); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := providers.Start(context.Background(), providers.ClientConfig{Name: "fifo", Command: fifo, SHA256: strings.Repeat("ab", 32)})
		done <- err
	}()
	select {
	case err := <-done:
		want := fmt.Sprintf(`start provider "fifo": check sha256 of %s: not a regular file (a named pipe); a pinned adapter must be one`, fifo)
		if err == nil || err.Error() != want {
			t.Fatalf("err = %v\nwant %s", err, want)
		}
	case <-time.After(10 * time.Second):
		// Unblock the reader so the goroutine ends.
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("Start blocked on the FIFO")
	}
}

// TestWrongPinLeavesNoCopy: a mismatch removes the copy it was writing.
func TestWrongPinLeavesNoCopy(t *testing.T) {
	_, adapter, _, _, tmp := pinnedSetup(t)
	_, err := providers.Start(context.Background(), providers.ClientConfig{Name: "p", Command: adapter, SHA256: strings.Repeat("cd", 32)})
	if !errors.Is(err, providers.ErrChecksumMismatch) {
		t.Fatalf("err = %v", err)
	}
	if left := entries(t, tmp); len(left) != 0 {
		t.Fatalf("copies left after a mismatch: %v", left)
	}
}
