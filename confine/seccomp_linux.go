//go:build linux && (amd64 || arm64)

package confine

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The seccomp filter of net = false: what Landlock cannot say (below ABI 9 and 10) about
// sockets, said by system call. It allows socket(2) for Unix stream and seqpacket
// sockets only (the adapter's go-plugin socket is one; a Unix datagram socket could send
// to any socket path, and SOCK_RAW is a datagram one), refuses connect(2) whatever the
// socket (so no pathname or abstract Unix socket of another process, and no TCP or UDP:
// no such socket can even be made), and io_uring, whose operations seccomp does not see.
// socketpair(2) stays: both ends are the process's own. A system call of another
// architecture (x32, or 32-bit x86 with its socketcall multiplexer) ends the process.
//
// seccomp_data: nr at 0, arch at 4, the arguments from 16, 8 bytes each (low half first:
// both architectures here are little-endian).

const (
	offNR, offArch, offArg0, offArg1 = 0, 4, 16, 24
)

func seccompAvailable() bool {
	_, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	return err == nil
}

// noNetFilter is the program; it is assembled by installNoNet.
func noNetFilter() []bpf.Instruction {
	errno := func(e unix.Errno) bpf.Instruction {
		return bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(e)}
	}
	p := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArch, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
		bpf.LoadAbsolute{Off: offNR, Size: 4},
	}
	if x32Bit != 0 { // amd64: x32 system calls are the same numbers with this bit
		p = append(p, bpf.JumpIf{Cond: bpf.JumpBitsNotSet, Val: x32Bit, SkipTrue: 1}, errno(unix.ENOSYS))
	}
	for _, d := range []struct {
		nr    uint32
		errno unix.Errno
	}{{unix.SYS_CONNECT, unix.EACCES}, {unix.SYS_IO_URING_SETUP, unix.ENOSYS}, {unix.SYS_IO_URING_ENTER, unix.ENOSYS}, {unix.SYS_IO_URING_REGISTER, unix.ENOSYS}} {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: d.nr, SkipTrue: 1}, errno(d.errno))
	}
	return append(p,
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.SYS_SOCKET, SkipTrue: 8}, // → allow
		bpf.LoadAbsolute{Off: offArg0, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.AF_UNIX, SkipTrue: 5}, // → EAFNOSUPPORT
		bpf.LoadAbsolute{Off: offArg1, Size: 4},
		bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: ^uint32(unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK)},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SOCK_STREAM, SkipTrue: 3},    // → allow
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SOCK_SEQPACKET, SkipTrue: 2}, // → allow
		errno(unix.EACCES),
		errno(unix.EAFNOSUPPORT),
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
	)
}

// installNoNet installs the filter on every thread of this process (which then execs the
// command: the filter stays, for it and everything it starts).
func installNoNet() error {
	raw, err := bpf.Assemble(noNetFilter())
	if err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	runtime.LockOSThread() // no_new_privs is per thread; TSYNC copies it with the filter
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("seccomp: no_new_privs: %w", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog))); e != 0 {
		return fmt.Errorf("seccomp: %w", e)
	}
	return nil
}
