package pgtest

import (
	"net"
	"os"
	"syscall"
	"testing"
)

// The port is picked by binding and closing it, and postgres binds it afterwards: when
// another process took it in between, start picks another instead of failing (or
// waiting on someone else's server).
func TestStartPicksAnotherPortWhenItsPortIsTaken(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	taken := held.Addr().(*net.TCPAddr).Port
	picks := 0
	defer func(p func() (int, error)) { pickPort = p }(pickPort)
	real := pickPort
	pickPort = func() (int, error) {
		if picks++; picks == 1 {
			return taken, nil
		}
		return real()
	}
	s, err := start()
	if err != nil {
		t.Fatalf("start with its first port taken: %v", err)
	}
	defer func() {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
		os.RemoveAll(s.dir)
	}()
	if picks != 2 || s.port == taken {
		t.Fatalf("picks %d, port %d (the taken one is %d): want a second pick", picks, s.port, taken)
	}
	if ours, err := s.answers(); !ours {
		t.Fatalf("the server on the second port: %v", err)
	}
}
