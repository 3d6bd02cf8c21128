// Package confine runs a command under Landlock, the Linux kernel's unprivileged
// sandbox: the processes agenthost starts by command (MCP servers and provider adapters)
// may read only the paths their manifest entry lists (and the system directories a
// program needs to start), write only the ones it lists, and, with net = false, make no
// TCP connection.
//
// A process cannot confine a child it has not started yet, and Landlock applies to the
// calling thread and what it executes; so the host re-executes itself (Wrap rewrites the
// exec.Cmd into "agenthost __confine … -- COMMAND ARGS"), and that process confines
// itself (Main) and execs the command. Where the kernel has no Landlock, the command runs
// unconfined and Available says so, for the host to warn.
//
// What it must not do: decide what a command may touch (the manifest does), or import the
// host.
package confine
