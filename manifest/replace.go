package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ErrChanged is a manifest that is no longer the text an edit was made from.
var ErrChanged = errors.New("the manifest changed since the edit was computed")

// ReplaceFile writes data as the manifest at path, in place of old, which is what the
// edit was made from. data must load as a manifest read from path does (Parse, every
// check), or nothing is written. Under a lock on the file's directory (so that two
// replacements run one after the other), the file must still hold old (else
// ErrChanged); then commit runs (the caller's audit record: an error from it writes
// nothing), and data replaces the file atomically (a temporary file in the same
// directory, synced, renamed over it, with the file's permissions). A symlink is
// written through: its target is replaced and the link stays. It returns the path
// written.
func ReplaceFile(path string, old, data []byte, commit func() error) (string, error) {
	if _, err := Parse(path, data); err != nil {
		return "", fmt.Errorf("the edited manifest does not load: %w", err)
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("manifest: %w", err)
	}
	dir := filepath.Dir(target)
	unlock, err := lockDir(dir)
	if err != nil {
		return "", err
	}
	defer unlock()
	st, err := os.Stat(target)
	if err != nil {
		return "", fmt.Errorf("manifest: %w", err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("manifest: %s is not a regular file", target)
	}
	cur, err := os.ReadFile(target)
	if err != nil {
		return "", fmt.Errorf("manifest: %w", err)
	}
	if !bytes.Equal(cur, old) {
		return "", fmt.Errorf("%s: %w", path, ErrChanged)
	}
	tmp, err := writeTemp(dir, filepath.Base(target), data, st.Mode().Perm())
	if err != nil {
		return "", err
	}
	if err := commit(); err != nil {
		os.Remove(tmp)
		return "", err
	}
	if err := os.Rename(tmp, target); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("manifest: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return target, nil
}

func writeTemp(dir, base string, data []byte, perm os.FileMode) (string, error) {
	f, err := os.CreateTemp(dir, "."+base+".edit-*")
	if err != nil {
		return "", fmt.Errorf("manifest: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("manifest: %w", err)
	}
	return f.Name(), nil
}

// lockDir takes an exclusive lock on dir (flock), released by the function it returns.
func lockDir(dir string) (func(), error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	for {
		err = syscall.Flock(int(d.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("manifest: lock %s: %w", dir, err)
	}
	return func() {
		syscall.Flock(int(d.Fd()), syscall.LOCK_UN)
		d.Close()
	}, nil
}
