// Command attacker is confine's hostile command: each mode tries one way out of its
// confinement and prints "MODE: ok" (it got through) or "MODE: denied: ERROR" (the
// kernel said no), exiting 0 or 3. The tests run it confined and unconfined: the
// unconfined run shows each attempt would succeed, so a "denied" is the confinement's.
//
//	pg DIR PORT     query PostgreSQL through its Unix socket in DIR
//	udp ADDR        send a UDP datagram
//	tcp ADDR        open a TCP connection
//	abstract NAME   connect to the abstract Unix socket @NAME
//	unixgram PATH   send a datagram to the Unix datagram socket PATH
//	unixraw         make a SOCK_RAW Unix socket (the kernel makes it a datagram one)
//	kill PID        send SIGKILL to PID
//	parent          signal 0 (the permission check) to its parent
//	ptrace PID      attach to PID
//	listen DIR      listen on a Unix socket in DIR (what go-plugin's adapters do)
//	hold            block until stdin ends (a sibling for kill and ptrace)
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: attacker MODE ARGS")
		os.Exit(2)
	}
	mode, args := os.Args[1], os.Args[2:]
	if mode == "hold" {
		_, _ = io.Copy(io.Discard, os.Stdin)
		return
	}
	out, err := attack(mode, args)
	if err != nil {
		fmt.Printf("%s: denied: %v\n", mode, err)
		os.Exit(3)
	}
	fmt.Printf("%s: ok%s\n", mode, out)
}

func attack(mode string, args []string) (string, error) {
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	switch mode {
	case "pg":
		return pg(arg(0), arg(1))
	case "udp", "tcp", "unixgram":
		c, err := net.Dial(mode, arg(0))
		if err != nil {
			return "", err
		}
		defer c.Close()
		_, err = c.Write([]byte("attack"))
		return "", err
	case "abstract":
		c, err := net.Dial("unix", "@"+arg(0))
		if err != nil {
			return "", err
		}
		return "", c.Close()
	case "unixraw":
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_RAW, 0)
		if err != nil {
			return "", err
		}
		return "", unix.Close(fd)
	case "kill":
		pid, _ := strconv.Atoi(arg(0))
		return "", syscall.Kill(pid, syscall.SIGKILL)
	case "parent":
		return "", syscall.Kill(os.Getppid(), 0)
	case "ptrace":
		runtime.LockOSThread()
		pid, _ := strconv.Atoi(arg(0))
		return "", unix.PtraceSeize(pid) // detached again when this process exits
	case "listen":
		l, err := net.Listen("unix", filepath.Join(arg(0), "s"))
		if err != nil {
			return "", err
		}
		return "", l.Close()
	}
	return "", fmt.Errorf("unknown mode %q", mode)
}

// pg connects over the socket and asks who it is: what reading the users' table starts with.
func pg(dir, port string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, fmt.Sprintf("host=%s port=%s user=postgres dbname=postgres sslmode=disable", dir, port))
	if err != nil {
		return "", err
	}
	defer c.Close(ctx)
	var who string
	if err := c.QueryRow(ctx, "select current_user").Scan(&who); err != nil {
		return "", err
	}
	return " " + who, nil
}
