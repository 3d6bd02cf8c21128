// Package confine runs a command under Landlock, the Linux kernel's unprivileged
// sandbox, and, without network, a seccomp filter: the processes agenthost starts by
// command (MCP servers and provider adapters) may read only the paths their spec lists
// (and the system directories and files a program needs to start), write only the ones
// it lists, ptrace, signal and reach the abstract Unix sockets of nothing outside their
// own process tree (Landlock ABI 6), and, with net = false, have no socket that leaves
// the process (seccomp.go): no TCP, UDP or other family, no connect(2) to a Unix socket.
//
// A process cannot confine a child it has not started yet, and Landlock applies to the
// calling thread and what it executes; so the host re-executes itself (Wrap rewrites the
// exec.Cmd into "agenthost __confine … -- COMMAND ARGS"), and that process confines
// itself (Main) and execs the command. Kernel says what this kernel enforces and
// Kernel.Missing what it would leave out of a spec: the host warns of that, and a spec
// that is Required is refused instead (ErrPartial).
//
// What it must not do: decide what a command may touch (the manifest does), or import the
// host.
package confine
