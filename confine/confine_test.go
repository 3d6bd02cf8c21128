//go:build linux

package confine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/confine"
	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/store/pgtest"
)

var attacker, self string

// The test binary is also the confining one: run as "BINARY __confine …" it is what
// agenthost is then (Main), so Wrap can re-execute it.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == confine.Subcommand {
		fmt.Fprintln(os.Stderr, "confine:", confine.Main(os.Args[2:]))
		os.Exit(126)
	}
	attacker = testbin.Must(testbin.Bin{Pkg: "confine/testdata/attacker"})
	var err error
	if self, err = os.Executable(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	pgtest.Stop()
	testbin.Cleanup()
	os.Exit(code)
}

var noNet = confine.Spec{Net: new(bool)}

// attack runs the attacker in mode, confined by spec (nil: not confined), and returns
// the line it printed.
func attack(t *testing.T, spec *confine.Spec, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, attacker, args...)
	if spec != nil {
		if err := confine.Wrap(cmd, self, *spec); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 3) {
		t.Fatalf("attacker %v: %v\n%s%s", args, err, out.String(), errb.String())
	}
	return strings.TrimSpace(out.String())
}

func wantDenied(t *testing.T, got, mode, errText string) {
	t.Helper()
	if !strings.HasPrefix(got, mode+": denied: ") || !strings.Contains(got, errText) {
		t.Fatalf("confined %s: %q, want denied with %q", mode, got, errText)
	}
}

// With net = false the command cannot reach PostgreSQL through its Unix socket (the
// attack that read the users' token hashes); unconfined, the same attacker queries it.
func TestNoNetCannotReachPostgresThroughItsUnixSocket(t *testing.T) {
	dir, port := pgtest.Start(t).Socket()
	if got := attack(t, nil, "pg", dir, strconv.Itoa(port)); got != "pg: ok postgres" {
		t.Fatalf("unconfined: %q", got)
	}
	wantDenied(t, attack(t, &noNet, "pg", dir, strconv.Itoa(port)), "pg", "permission denied")
}

// With net = false no UDP datagram leaves: the listener's first datagram is the test's
// own marker, sent after the confined attacker has exited.
func TestNoNetCannotSendUDP(t *testing.T) {
	l, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	next := func() string {
		l.SetReadDeadline(time.Now().Add(30 * time.Second))
		b := make([]byte, 64)
		n, _, err := l.ReadFrom(b)
		if err != nil {
			t.Fatal(err)
		}
		return string(b[:n])
	}
	if got := attack(t, nil, "udp", l.LocalAddr().String()); got != "udp: ok" || next() != "attack" {
		t.Fatalf("unconfined: %q", got)
	}
	wantDenied(t, attack(t, &noNet, "udp", l.LocalAddr().String()), "udp", "address family not supported")
	marker, err := net.Dial("udp", l.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer marker.Close()
	marker.Write([]byte("marker"))
	if got := next(); got != "marker" {
		t.Fatalf("the listener got %q from the confined command", got)
	}
}

// With net = false no TCP connection is made.
func TestNoNetCannotDialTCP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for c, err := l.Accept(); err == nil; c, err = l.Accept() {
			c.Close()
		}
	}()
	if got := attack(t, nil, "tcp", l.Addr().String()); got != "tcp: ok" {
		t.Fatalf("unconfined: %q", got)
	}
	wantDenied(t, attack(t, &noNet, "tcp", l.Addr().String()), "tcp", "address family not supported")
}

// Confined, the command cannot connect to an abstract Unix socket another process
// listens on: not with net = false (seccomp and Landlock's scope), and not with the
// network either (the scope holds whatever net says).
func TestConfinedCannotConnectToAnAbstractUnixSocket(t *testing.T) {
	name := fmt.Sprintf("agenthost-confine-test-%d", os.Getpid())
	l, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for c, err := l.Accept(); err == nil; c, err = l.Accept() {
			c.Close()
		}
	}()
	if got := attack(t, nil, "abstract", name); got != "abstract: ok" {
		t.Fatalf("unconfined: %q", got)
	}
	wantDenied(t, attack(t, &noNet, "abstract", name), "abstract", "permission denied")
	wantDenied(t, attack(t, &confine.Spec{}, "abstract", name), "abstract", "operation not permitted")
}

// With net = false the command cannot send to a Unix datagram socket by its path, nor
// make a SOCK_RAW Unix socket (which the kernel turns into a datagram one).
func TestNoNetCannotSendToAUnixDatagramSocket(t *testing.T) {
	path := t.TempDir() + "/dgram"
	l, err := net.ListenPacket("unixgram", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := attack(t, nil, "unixgram", path); got != "unixgram: ok" {
		t.Fatalf("unconfined: %q", got)
	}
	wantDenied(t, attack(t, &noNet, "unixgram", path), "unixgram", "permission denied")
	wantDenied(t, attack(t, &noNet, "unixraw"), "unixraw", "permission denied")
}

// With net = false the command still listens on a Unix socket in its write list: what a
// provider adapter does for go-plugin.
func TestNoNetStillListensOnAUnixSocketInItsWriteList(t *testing.T) {
	dir := t.TempDir()
	spec := confine.Spec{Write: []string{dir}, Net: new(bool)}
	if got := attack(t, &spec, "listen", dir); got != "listen: ok" {
		t.Fatalf("confined listen: %q", got)
	}
}

// hold starts a process of the same user outside the confined one's tree.
func hold(t *testing.T) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(attacker, "hold")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, in
}

// A confined command (whatever net says) cannot kill or ptrace a sibling process, nor
// signal its parent; unconfined, the same attacker kills the sibling.
func TestConfinedCannotSignalOrTraceOutsideItsTree(t *testing.T) {
	for _, spec := range []confine.Spec{noNet, {}} {
		sibling, in := hold(t)
		pid := strconv.Itoa(sibling.Process.Pid)
		wantDenied(t, attack(t, &spec, "kill", pid), "kill", "operation not permitted")
		wantDenied(t, attack(t, &spec, "ptrace", pid), "ptrace", "operation not permitted")
		wantDenied(t, attack(t, &spec, "parent"), "parent", "operation not permitted")
		in.Close()
		if err := sibling.Wait(); err != nil {
			t.Fatalf("the sibling did not live to exit by itself: %v", err)
		}
	}
	sibling, _ := hold(t)
	if got := attack(t, nil, "kill", strconv.Itoa(sibling.Process.Pid)); got != "kill: ok" {
		t.Fatalf("unconfined: %q", got)
	}
	if err := sibling.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("unconfined kill: the sibling ended with %v", err)
	}
	if got := attack(t, nil, "parent"); got != "parent: ok" {
		t.Fatalf("unconfined: %q", got)
	}
}

// confine = "required" on a kernel that cannot enforce all of the spec (here one made to
// look like Landlock ABI 5: no signal or abstract socket scopes) refuses to start the
// command, in Wrap (the host) and again in Main (the confining process); without
// required the command starts, and the missing scopes show.
func TestRequiredRefusesPartialConfinement(t *testing.T) {
	t.Setenv(confine.ABIEnv, "5")
	cmd := exec.Command(attacker, "parent")
	err := confine.Wrap(cmd, self, confine.Spec{Net: new(bool), Required: true})
	want := `confinement would be partial (confine = "required"): this kernel does not enforce signals and abstract Unix sockets (Landlock ABI 5 < 6)`
	if !errors.Is(err, confine.ErrPartial) || err.Error() != want {
		t.Fatalf("Wrap: %v", err)
	}
	out, err := exec.Command(self, confine.Subcommand, "-abi", "5", "-required", "--", attacker, "parent").CombinedOutput()
	if err == nil || !strings.Contains(string(out), want) {
		t.Fatalf("Main: %v %s", err, out)
	}
	if got := attack(t, &confine.Spec{Net: new(bool)}, "parent"); got != "parent: ok" {
		t.Fatalf("best effort at ABI 5: %q", got)
	}
	t.Setenv(confine.ABIEnv, "")
	if err := confine.Wrap(exec.Command(attacker, "parent"), self, confine.Spec{Net: new(bool), Required: true}); err != nil {
		t.Fatalf("required on this kernel (%v): %v", confine.Detect(), err)
	}
}

// What each kernel leaves out, as Missing says it and the host reports it.
func TestMissingSaysWhatAKernelDoesNotEnforce(t *testing.T) {
	no := confine.Spec{Net: new(bool)}
	for _, c := range []struct {
		k    confine.Kernel
		spec confine.Spec
		want string
	}{
		{confine.Kernel{Landlock: 7, Seccomp: true}, no, ""},
		{confine.Kernel{Landlock: 6, Seccomp: true}, no, ""},
		{confine.Kernel{Landlock: 5, Seccomp: true}, no, "signals and abstract Unix sockets (Landlock ABI 5 < 6)"},
		{confine.Kernel{Landlock: 7}, no, "net = false: UDP, Unix sockets stay open (no seccomp)"},
		{confine.Kernel{Landlock: 7}, confine.Spec{}, ""},
		{confine.Kernel{Landlock: 10}, no, ""},
		{confine.Kernel{Landlock: 3}, no, "signals and abstract Unix sockets (Landlock ABI 3 < 6)|net = false: TCP, UDP, Unix sockets stay open (no seccomp)"},
		{confine.Kernel{Seccomp: true}, no, "paths and ptrace (this kernel has no Landlock)"},
	} {
		if got := strings.Join(c.k.Missing(c.spec), "|"); got != c.want {
			t.Errorf("%+v %v: %q, want %q", c.k, c.spec.NoNet(), got, c.want)
		}
	}
	if got := (confine.Kernel{Landlock: 7, Seccomp: true}).String(); got != "Landlock ABI 7 (paths, ptrace, TCP, signals, abstract Unix sockets); seccomp (net = false: no socket but Unix stream, no connect)" {
		t.Errorf("String: %q", got)
	}
}
