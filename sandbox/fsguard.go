package sandbox

import (
	"cmp"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/tetratelabs/wazero"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

// fsConfig mounts the allowed paths. Each mount is a rootFS: every operation
// the guest asks for is one call on an os.Root opened on the host directory,
// so the path is resolved and acted on in one step that cannot leave the
// directory (openat with no-follow resolution, component by component),
// whatever another call of the plugin does to the tree at the same time.
//
// wazero's own DirFS is not used: it joins the guest path to the host
// directory and lets the kernel follow symlinks anywhere on the host.
func fsConfig(paths map[string]string) (wazero.FSConfig, []*os.Root, error) {
	if len(paths) == 0 {
		return nil, nil, nil
	}
	cfg := wazero.NewFSConfig()
	var roots []*os.Root
	// The mounts are made in one order, sorted by guest path, at every instance: a
	// pre-initialised Go guest keeps from its snapshot which preopened directory number
	// is which path (its runtime reads the preopens once, at init), so an instance
	// mounted in another order (the map's) would see one mount's files at another's
	// path, the read-only marking on the wrong one.
	hosts := make([]string, 0, len(paths))
	for h := range paths {
		hosts = append(hosts, h)
	}
	slices.SortFunc(hosts, func(a, b string) int { return cmp.Or(cmp.Compare(paths[a], paths[b]), cmp.Compare(a, b)) })
	for _, hostPath := range hosts {
		guestPath := paths[hostPath]
		readOnly := strings.HasPrefix(hostPath, "ro:")
		dir := strings.TrimPrefix(hostPath, "ro:")
		root, err := os.OpenRoot(dir)
		if err != nil {
			for _, r := range roots {
				r.Close()
			}
			return nil, nil, fmt.Errorf("allowed_paths %q: %w", hostPath, err)
		}
		roots = append(roots, root)
		cfg = cfg.(sysfs.FSConfig).WithSysFSMount(&rootFS{root: root, readOnly: readOnly}, guestPath)
	}
	return cfg, roots, nil
}

// rootFS is an experimentalsys.FS confined to one host directory by os.Root.
// Symlinks are followed only while they stay inside the directory; a guest
// cannot create one that points outside it (even though os.Root would not
// follow it, the host or another program might); a read-only mount refuses
// every write with EROFS.
type rootFS struct {
	experimentalsys.UnimplementedFS
	root     *os.Root
	readOnly bool
}

// rel turns wazero's mount-relative path into an os.Root name.
func rel(p string) string {
	p = strings.TrimLeft(p, "/")
	if p == "" {
		return "."
	}
	return p
}

// errnoOf maps an os.Root error to an errno. A path that would leave the
// mount is EPERM: the guest asked for something it is not allowed.
func errnoOf(err error) experimentalsys.Errno {
	if err == nil {
		return 0
	}
	if strings.Contains(err.Error(), "path escapes from parent") {
		return experimentalsys.EPERM
	}
	return experimentalsys.UnwrapOSError(err)
}

const writeFlags = experimentalsys.O_WRONLY | experimentalsys.O_RDWR | experimentalsys.O_CREAT |
	experimentalsys.O_TRUNC | experimentalsys.O_APPEND

func (r *rootFS) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if r.readOnly && flag&writeFlags != 0 {
		return nil, experimentalsys.EROFS
	}
	name := rel(p)
	if flag&experimentalsys.O_NOFOLLOW != 0 {
		// os.Root follows a final symlink (inside the root) whatever the
		// flags say; O_NOFOLLOW asks for ELOOP instead. Checking first is
		// only a question of which file inside the mount is opened, never
		// of leaving it.
		if fi, err := r.root.Lstat(name); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, experimentalsys.ELOOP
		}
	}
	f, errno := openOrdinary(r.root, name, osFlag(flag), perm&fs.ModePerm)
	if errno != 0 {
		return nil, errno
	}
	rf := &rootFile{fs: r, name: name, flag: flag, file: f}
	rf.seeker.f = rf
	return rf, 0
}

// openOrdinary opens a regular file or a directory, and refuses (ENOTSUP)
// anything else planted in the mount: a FIFO, socket or device would block
// the guest in open or read inside a host call, where the call's deadline
// cannot stop it (blocking.go). O_NONBLOCK makes the open itself return at
// once whatever the name is (on a regular file or directory it changes
// nothing); only a guest's own path can reach here, and a guest cannot make
// special files (WASI has no mknod).
func openOrdinary(root *os.Root, name string, flag int, perm fs.FileMode) (*os.File, experimentalsys.Errno) {
	f, err := root.OpenFile(name, flag|syscall.O_NONBLOCK, perm)
	if err != nil {
		return nil, errnoOf(err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, experimentalsys.UnwrapOSError(err)
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		f.Close()
		return nil, experimentalsys.ENOTSUP
	}
	return f, 0
}

// osFlag converts WASI open flags to os flags. O_NOFOLLOW is handled by
// OpenFile and os.Root adds it to every component itself.
func osFlag(oflag experimentalsys.Oflag) int {
	var flag int
	switch oflag & (experimentalsys.O_RDONLY | experimentalsys.O_RDWR | experimentalsys.O_WRONLY) {
	case experimentalsys.O_RDWR:
		flag = os.O_RDWR
	case experimentalsys.O_WRONLY:
		flag = os.O_WRONLY
	default:
		flag = os.O_RDONLY
	}
	for _, m := range []struct {
		from experimentalsys.Oflag
		to   int
	}{
		{experimentalsys.O_APPEND, os.O_APPEND},
		{experimentalsys.O_CREAT, os.O_CREATE},
		{experimentalsys.O_EXCL, os.O_EXCL},
		{experimentalsys.O_SYNC, os.O_SYNC},
		{experimentalsys.O_TRUNC, os.O_TRUNC},
		{experimentalsys.O_DIRECTORY, syscall.O_DIRECTORY},
		{experimentalsys.O_DSYNC, syscall.O_DSYNC},
		{experimentalsys.O_NONBLOCK, syscall.O_NONBLOCK},
	} {
		if oflag&m.from != 0 {
			flag |= m.to
		}
	}
	return flag
}

func (r *rootFS) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) {
	fi, err := r.root.Lstat(rel(p))
	if err != nil {
		return sys.Stat_t{}, errnoOf(err)
	}
	return sys.NewStat_t(fi), 0
}

func (r *rootFS) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	fi, err := r.root.Stat(rel(p))
	if err != nil {
		return sys.Stat_t{}, errnoOf(err)
	}
	return sys.NewStat_t(fi), 0
}

func (r *rootFS) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	e := errnoOf(r.root.Mkdir(rel(p), perm&fs.ModePerm))
	if e == experimentalsys.ENOTDIR { // what wazero's DirFS answers
		e = experimentalsys.ENOENT
	}
	return e
}

func (r *rootFS) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	return errnoOf(r.root.Chmod(rel(p), perm&fs.ModePerm))
}

// Rename and Link refuse to move or copy a symlink to where its (relative)
// target would leave the mount: that would create an escaping link without
// calling Symlink.
func (r *rootFS) Rename(from, to string) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	return errnoOf(r.root.Rename(rel(from), rel(to)))
}

// Rmdir and Unlink share os.Root.Remove, which removes either kind; the
// kind is checked first so the guest gets POSIX's ENOTDIR / EISDIR. If the
// entry changes kind in between, the wrong kind of entry inside the mount
// may be removed: never one outside it.
func (r *rootFS) Rmdir(p string) experimentalsys.Errno {
	return r.remove(p, true)
}

func (r *rootFS) Unlink(p string) experimentalsys.Errno {
	return r.remove(p, false)
}

func (r *rootFS) remove(p string, dir bool) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	name := rel(p)
	fi, err := r.root.Lstat(name)
	if err != nil {
		return errnoOf(err)
	}
	switch isDir := fi.IsDir(); {
	case dir && !isDir:
		return experimentalsys.ENOTDIR
	case !dir && isDir:
		return experimentalsys.EISDIR
	}
	return errnoOf(r.root.Remove(name))
}

func (r *rootFS) Link(oldPath, newPath string) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	return errnoOf(r.root.Link(rel(oldPath), rel(newPath)))
}

// Symlink refuses a target that could ever lead out of the mount: an absolute
// target (a host path, meaningless to the guest) or a relative one that climbs
// above the link's own directory ("..", "../x", "a/../../x").
//
// Where the link sits does not matter, and that is the point: a rule that let
// "sub/l -> ../x" through because it stays inside today would be undone by the
// guest renaming "sub" to the top of the mount (or a parallel call swapping a
// directory on the link's path), after which "../x" leaves it. A target that
// only descends resolves inside the link's directory wherever the link or its
// directory is moved, and every link it passes through obeys the same rule.
// os.Root would not follow an escaping link anyway; this keeps the host and
// other programs reading the mount from following one either.
func (r *rootFS) Symlink(target, linkName string) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	if !symlinkTargetDescends(target) {
		return experimentalsys.EPERM
	}
	return errnoOf(r.root.Symlink(target, rel(linkName)))
}

// symlinkTargetDescends reports whether target is relative and never climbs
// above the directory it is resolved from.
func symlinkTargetDescends(target string) bool {
	if target == "" || path.IsAbs(target) || filepath.IsAbs(target) || strings.ContainsRune(target, 0) {
		return false
	}
	clean := path.Clean(target)
	return clean != ".." && !strings.HasPrefix(clean, "../")
}

func (r *rootFS) Readlink(p string) (string, experimentalsys.Errno) {
	dst, err := r.root.Readlink(rel(p))
	if err != nil {
		return "", errnoOf(err)
	}
	return filepath.ToSlash(dst), 0
}

func (r *rootFS) Utimens(p string, atim, mtim int64) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	return errnoOf(r.root.Chtimes(rel(p), utime(atim), utime(mtim)))
}

// utime converts a WASI timestamp; the zero time.Time leaves it unchanged.
func utime(ns int64) time.Time {
	if ns == experimentalsys.UTIME_OMIT {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
