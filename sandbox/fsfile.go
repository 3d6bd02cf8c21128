package sandbox

import (
	"errors"
	"io"
	"os"
	"path"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
)

// rootFile is an experimentalsys.File for a file opened through a rootFS.
// Reads and writes go to the descriptor; the few operations that need a
// name again (reopening for append mode, listing a directory's entries)
// resolve it through the same os.Root, so they stay inside the mount too.
type rootFile struct {
	seeker[int64]
	fs   *rootFS
	name string // os.Root name, for the operations above
	flag experimentalsys.Oflag
	file *os.File

	st *sys.Stat_t // cached on first Stat: device, inode and kind do not change
}

func (f *rootFile) cached() (*sys.Stat_t, experimentalsys.Errno) {
	if f.st == nil {
		if _, e := f.Stat(); e != 0 {
			return nil, e
		}
	}
	return f.st, 0
}

func (f *rootFile) Dev() (uint64, experimentalsys.Errno) {
	st, e := f.cached()
	if e != 0 {
		return 0, e
	}
	return st.Dev, 0
}

func (f *rootFile) Ino() (sys.Inode, experimentalsys.Errno) {
	st, e := f.cached()
	if e != 0 {
		return 0, e
	}
	return st.Ino, 0
}

func (f *rootFile) IsDir() (bool, experimentalsys.Errno) {
	st, e := f.cached()
	if e != 0 {
		return false, e
	}
	return st.Mode.IsDir(), 0
}

func (f *rootFile) IsAppend() bool { return f.flag&experimentalsys.O_APPEND != 0 }

// SetAppend reopens the file through the root (an os.File cannot change its
// append mode) and keeps the new descriptor only if it is the same file.
func (f *rootFile) SetAppend(enable bool) experimentalsys.Errno {
	flag := f.flag &^ experimentalsys.O_APPEND
	if enable {
		flag |= experimentalsys.O_APPEND
	}
	if flag == f.flag {
		return 0
	}
	isDir, e := f.IsDir()
	if e != 0 {
		return e
	}
	if isDir {
		f.flag = flag
		return 0
	}
	off, err := f.file.Seek(0, io.SeekCurrent)
	if err != nil {
		return experimentalsys.UnwrapOSError(err)
	}
	nf, errno := openOrdinary(f.fs.root, f.name, osFlag(flag&^(experimentalsys.O_CREAT|experimentalsys.O_TRUNC|experimentalsys.O_EXCL)), 0)
	if errno != 0 {
		return errno
	}
	fi1, err1 := f.file.Stat()
	fi2, err2 := nf.Stat()
	if err1 != nil || err2 != nil || !os.SameFile(fi1, fi2) {
		nf.Close()
		return experimentalsys.ENOENT
	}
	if _, err := nf.Seek(off, io.SeekStart); err != nil {
		nf.Close()
		return experimentalsys.UnwrapOSError(err)
	}
	f.file.Close()
	f.file, f.flag = nf, flag
	return 0
}

func (f *rootFile) Stat() (sys.Stat_t, experimentalsys.Errno) {
	fi, err := f.file.Stat()
	if err != nil {
		return sys.Stat_t{}, experimentalsys.UnwrapOSError(err)
	}
	st := sys.NewStat_t(fi)
	f.st = &st
	return st, 0
}

func (f *rootFile) Read(buf []byte) (int, experimentalsys.Errno) {
	if len(buf) == 0 {
		return 0, 0
	}
	n, err := f.file.Read(buf)
	return n, f.ioErrno(err)
}

func (f *rootFile) Pread(buf []byte, off int64) (int, experimentalsys.Errno) {
	if len(buf) == 0 {
		return 0, 0
	}
	n, err := f.file.ReadAt(buf, off)
	return n, f.ioErrno(err)
}

// ioErrno maps a read or write error; EOF is not an error to WASI, and a
// directory answers EISDIR (os reports it in several ways).
func (f *rootFile) ioErrno(err error) experimentalsys.Errno {
	if err == nil || errors.Is(err, io.EOF) {
		return 0
	}
	e := experimentalsys.UnwrapOSError(err)
	if e == experimentalsys.EINVAL || e == experimentalsys.EBADF {
		if isDir, _ := f.IsDir(); isDir {
			return experimentalsys.EISDIR
		}
	}
	return e
}

// seeker gives rootFile its Seek. wazero's File.Seek returns an Errno, not
// io.Seeker's error, and go vet's stdmethods check would flag a method named
// Seek with that signature; declared on a generic type (instantiated with
// int64, so it still satisfies experimentalsys.File) vet leaves it alone.
type seeker[Off ~int64] struct{ f *rootFile }

func (s seeker[Off]) Seek(offset Off, whence int) (int64, experimentalsys.Errno) {
	n, err := s.f.file.Seek(int64(offset), whence)
	if err != nil {
		return 0, experimentalsys.UnwrapOSError(err)
	}
	return n, 0
}

// Readdir lists names from the descriptor and describes each one with an
// lstat through the root (os.File's own Readdir would lstat a host path).
// An entry removed in between keeps its place with inode 0 and no type, so
// wazero's directory cache still gets as many entries as it asked for.
func (f *rootFile) Readdir(n int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	names, err := f.file.Readdirnames(n)
	if err != nil && !errors.Is(err, io.EOF) {
		e := experimentalsys.UnwrapOSError(err)
		if e == experimentalsys.EINVAL || e == experimentalsys.ENOTDIR {
			e = experimentalsys.EBADF
		}
		return nil, e
	}
	dirents := make([]experimentalsys.Dirent, 0, len(names))
	for _, name := range names {
		fi, err := f.fs.root.Lstat(path.Join(f.name, name))
		if err != nil {
			dirents = append(dirents, experimentalsys.Dirent{Name: name})
			continue
		}
		st := sys.NewStat_t(fi)
		dirents = append(dirents, experimentalsys.Dirent{Name: name, Ino: st.Ino, Type: fi.Mode().Type()})
	}
	return dirents, 0
}

func (f *rootFile) Write(buf []byte) (int, experimentalsys.Errno) {
	if len(buf) == 0 {
		return 0, 0
	}
	n, err := f.file.Write(buf)
	return n, f.ioErrno(err)
}

func (f *rootFile) Pwrite(buf []byte, off int64) (int, experimentalsys.Errno) {
	if len(buf) == 0 {
		return 0, 0
	}
	n, err := f.file.WriteAt(buf, off)
	return n, f.ioErrno(err)
}

func (f *rootFile) Truncate(size int64) experimentalsys.Errno {
	if size < 0 {
		return experimentalsys.EINVAL
	}
	return f.ioErrno(f.file.Truncate(size))
}

func (f *rootFile) Sync() experimentalsys.Errno {
	return experimentalsys.UnwrapOSError(f.file.Sync())
}

func (f *rootFile) Datasync() experimentalsys.Errno { return f.Sync() }

// Utimens goes through the root by name: os.File has no futimens.
func (f *rootFile) Utimens(atim, mtim int64) experimentalsys.Errno {
	if f.fs.readOnly {
		return experimentalsys.EROFS
	}
	return errnoOf(f.fs.root.Chtimes(f.name, utime(atim), utime(mtim)))
}

func (f *rootFile) Close() experimentalsys.Errno {
	err := f.file.Close()
	if errors.Is(err, os.ErrClosed) {
		return 0
	}
	return experimentalsys.UnwrapOSError(err)
}

var _ experimentalsys.File = (*rootFile)(nil)
