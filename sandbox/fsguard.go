package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/tetratelabs/wazero"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

// fsConfig mounts the allowed paths. Each mount is a wazero DirFS behind a
// rootedFS that first resolves the path with os.Root, which refuses ".." and
// symlinks that lead outside the directory (wazero's DirFS follows symlinks
// anywhere on the host).
func fsConfig(paths map[string]string) (wazero.FSConfig, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	cfg := wazero.NewFSConfig()
	for hostPath, guestPath := range paths {
		readOnly := strings.HasPrefix(hostPath, "ro:")
		dir := strings.TrimPrefix(hostPath, "ro:")
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("allowed_paths %q: %w", hostPath, err)
		}
		// Resolve the mount point itself once: a symlinked mount is fine, it
		// is what the operator wrote.
		if abs, err = filepath.EvalSymlinks(abs); err != nil {
			return nil, fmt.Errorf("allowed_paths %q: %w", hostPath, err)
		}
		root, err := os.OpenRoot(abs)
		if err != nil {
			return nil, fmt.Errorf("allowed_paths %q: %w", hostPath, err)
		}
		var inner experimentalsys.FS = sysfs.DirFS(abs)
		if readOnly {
			inner = &sysfs.ReadFS{FS: inner}
		}
		mount := &rootedFS{FS: inner, root: root, readOnly: readOnly}
		cfg = cfg.(sysfs.FSConfig).WithSysFSMount(mount, guestPath)
	}
	return cfg, nil
}

// rootedFS refuses any path whose resolution leaves root. It checks the
// parent directory (every intermediate symlink) and, for operations that
// follow a final symlink, the path itself.
//
// The check and the operation are two steps, so a concurrent writer inside
// the mount could swap a directory for a symlink in between; mounts shared
// read-write between plugins that do not trust each other should be avoided.
type rootedFS struct {
	experimentalsys.FS
	root     *os.Root
	readOnly bool
}

func (r *rootedFS) inside(p string, followFinal bool) experimentalsys.Errno {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	if p == "" {
		return 0
	}
	if dir := path.Dir(p); dir != "." {
		if _, err := r.root.Stat(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return escapeErrno(err)
		}
	}
	if followFinal {
		if _, err := r.root.Stat(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return escapeErrno(err)
		}
	}
	return 0
}

// escapeErrno maps os.Root's refusals to EPERM, and anything else (e.g.
// ENOTDIR) to what the real call would have said.
func escapeErrno(err error) experimentalsys.Errno {
	if strings.Contains(err.Error(), "escapes") || errors.Is(err, fs.ErrPermission) {
		return experimentalsys.EPERM
	}
	return experimentalsys.UnwrapOSError(err)
}

func (r *rootedFS) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if e := r.inside(p, flag&experimentalsys.O_NOFOLLOW == 0); e != 0 {
		return nil, e
	}
	// wazero's ReadFS answers ENOSYS to a write; say what the mount is.
	const writes = experimentalsys.O_WRONLY | experimentalsys.O_RDWR | experimentalsys.O_CREAT |
		experimentalsys.O_TRUNC | experimentalsys.O_APPEND
	if r.readOnly && flag&writes != 0 {
		return nil, experimentalsys.EROFS
	}
	return r.FS.OpenFile(p, flag, perm)
}

func (r *rootedFS) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) {
	if e := r.inside(p, false); e != 0 {
		return sys.Stat_t{}, e
	}
	return r.FS.Lstat(p)
}

func (r *rootedFS) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	if e := r.inside(p, true); e != 0 {
		return sys.Stat_t{}, e
	}
	return r.FS.Stat(p)
}

func (r *rootedFS) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	if e := r.inside(p, false); e != 0 {
		return e
	}
	return r.FS.Mkdir(p, perm)
}

func (r *rootedFS) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	if e := r.inside(p, true); e != 0 {
		return e
	}
	return r.FS.Chmod(p, perm)
}

func (r *rootedFS) Rename(from, to string) experimentalsys.Errno {
	if e := r.inside(from, false); e != 0 {
		return e
	}
	if e := r.inside(to, false); e != 0 {
		return e
	}
	return r.FS.Rename(from, to)
}

func (r *rootedFS) Rmdir(p string) experimentalsys.Errno {
	if e := r.inside(p, false); e != 0 {
		return e
	}
	return r.FS.Rmdir(p)
}

func (r *rootedFS) Unlink(p string) experimentalsys.Errno {
	if e := r.inside(p, false); e != 0 {
		return e
	}
	return r.FS.Unlink(p)
}

func (r *rootedFS) Link(oldPath, newPath string) experimentalsys.Errno {
	if e := r.inside(oldPath, false); e != 0 {
		return e
	}
	if e := r.inside(newPath, false); e != 0 {
		return e
	}
	return r.FS.Link(oldPath, newPath)
}

func (r *rootedFS) Symlink(oldPath, linkName string) experimentalsys.Errno {
	if e := r.inside(linkName, false); e != 0 {
		return e
	}
	return r.FS.Symlink(oldPath, linkName)
}

func (r *rootedFS) Readlink(p string) (string, experimentalsys.Errno) {
	if e := r.inside(p, false); e != 0 {
		return "", e
	}
	return r.FS.Readlink(p)
}

func (r *rootedFS) Utimens(p string, atim, mtim int64) experimentalsys.Errno {
	if e := r.inside(p, true); e != 0 {
		return e
	}
	return r.FS.Utimens(p, atim, mtim)
}
