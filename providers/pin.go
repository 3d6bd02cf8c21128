package providers

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// A pinned adapter runs from a private copy of the bytes whose digest was checked.
//
// Checking a path and then executing the same path is a race: between the two, the file
// can be renamed over, a symlink on the way re-pointed, or the file written in place, and
// the process then runs bytes nobody checked (go-plugin's SecureConfig has the same gap:
// it hashes cmd.Path, then execs cmd.Path). So the file is opened once, and what is read
// from that descriptor is both hashed and written to a new file in a directory only this
// process's user can enter (os.MkdirTemp makes it 0700); the copy is made read-and-execute
// only (0500) and is what runs. An exec of the original descriptor through /proc/self/fd
// would avoid the copy, but a descriptor's content still changes when the file is written
// in place. The copy lives as long as its process: a restart makes a new one, Close and
// CleanupClients remove it.
//
// The copy is under TMPDIR: a TMPDIR mounted noexec needs another TMPDIR for pinned
// adapters. A program that looks for files beside its own executable (os.Executable) finds
// the copy's directory, not the original's; its argv[0] is still the configured command.

// pinnedExe is one verified private copy. A confined adapter's socket directory
// (confine.go) is one too, with no copy in it: removed with its process the same way.
type pinnedExe struct {
	dir  string // the private directory, removed with the copy
	path string // the copy, which is executed ("" for a socket directory)
}

// afterVerify, when set (by tests), runs after the copy is verified and before it is
// executed: the moment an attacker would swap the original.
var afterVerify func(original string)

// live holds the copies of running adapters, so that CleanupClients removes them too.
var live = struct {
	sync.Mutex
	m map[*pinnedExe]bool
}{m: map[*pinnedExe]bool{}}

// parsePin decodes a pin: 64 hex digits, optionally prefixed "sha256:".
func parsePin(pin string) ([]byte, error) {
	want, err := hex.DecodeString(strings.TrimPrefix(strings.ToLower(pin), "sha256:"))
	if err != nil || len(want) != sha256.Size {
		return nil, fmt.Errorf("sha256 pin %q is not 64 hex digits", pin)
	}
	return want, nil
}

// copyVerified reads path once and returns a private copy of what it read if its sha256
// is the pin. A path that is not a regular file (a FIFO, a device, a directory) is
// refused before anything is read: reading a FIFO would wait for a writer, and what a
// writer sends is not a file that can be pinned.
func copyVerified(path, pin string) (*pinnedExe, error) {
	want, err := parsePin(pin)
	if err != nil {
		return nil, err
	}
	// O_NONBLOCK: opening a FIFO for reading would otherwise block until a writer comes.
	src, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("check sha256: %w", err)
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return nil, fmt.Errorf("check sha256: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("check sha256 of %s: not a regular file (%s); a pinned adapter must be one", path, fileKind(fi.Mode()))
	}
	dir, err := os.MkdirTemp("", "agenthost-provider-")
	if err != nil {
		return nil, fmt.Errorf("private copy of %s: %w", path, err)
	}
	exe := &pinnedExe{dir: dir, path: filepath.Join(dir, filepath.Base(path))}
	if err := exe.write(src, path, want); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	live.Lock()
	live.m[exe] = true
	live.Unlock()
	return exe, nil
}

// write copies src to the private file, hashing the same bytes, and makes the file
// executable only when the digest is the pin.
func (e *pinnedExe) write(src io.Reader, path string, want []byte) error {
	h := sha256.New()
	if err := e.copyFrom(src, h); err != nil {
		return fmt.Errorf("private copy of %s: %w", path, err)
	}
	if got := h.Sum(nil); string(got) != string(want) {
		return fmt.Errorf("%w for %s: pinned %x, file has %x", ErrChecksumMismatch, path, want, got)
	}
	if err := os.Chmod(e.path, 0o500); err != nil {
		return fmt.Errorf("private copy of %s: %w", path, err)
	}
	return nil
}

// copyFrom writes the copy, holding syscall.ForkLock for reading while the file is open
// for writing. A child forked meanwhile by another goroutine (another adapter, an MCP
// server) would inherit the descriptor until its own exec closes it, and exec of the
// copy fails with ETXTBSY while any process holds it open for writing; a fork takes
// ForkLock for writing, so none happens in that window. Other forks wait for the copy.
func (e *pinnedExe) copyFrom(src io.Reader, h io.Writer) error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	dst, err := os.OpenFile(e.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.MultiWriter(dst, h), src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	return err
}

// remove deletes the copy and its directory; a nil copy is nothing to remove.
func (e *pinnedExe) remove() {
	if e == nil {
		return
	}
	live.Lock()
	delete(live.m, e)
	live.Unlock()
	os.RemoveAll(e.dir)
}

// removeAllCopies removes every copy still present (CleanupClients).
func removeAllCopies() {
	live.Lock()
	copies := make([]*pinnedExe, 0, len(live.m))
	for e := range live.m {
		copies = append(copies, e)
	}
	live.Unlock()
	for _, e := range copies {
		e.remove()
	}
}

func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return m.Type().String()
}
