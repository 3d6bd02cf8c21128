package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a running PostgreSQL server.
type Server struct {
	dir    string
	port   int
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has exited (its Wait returned)
	uid    *syscall.Credential
	dbs    atomic.Int64
}

// BinDir finds the PostgreSQL binaries (pg_config's bindir, else Debian's versioned
// directories), or "" when they are not installed.
func BinDir() string {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if dir := strings.TrimSpace(string(out)); fileExists(filepath.Join(dir, "initdb")) {
			return dir
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) > 0 {
		return filepath.Dir(matches[len(matches)-1])
	}
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

var (
	once   sync.Once
	shared *Server
	errS   error
)

// Start returns the process's shared server, starting it on first use. It fails the
// test when PostgreSQL is not installed: make deps installs it, so a missing server is
// a broken setup, not a reason to skip.
func Start(t testing.TB) *Server {
	t.Helper()
	once.Do(func() { shared, errS = start() })
	if errS != nil {
		t.Fatalf("pgtest: %v", errS)
	}
	return shared
}

func start() (*Server, error) {
	bin := BinDir()
	if bin == "" {
		return nil, fmt.Errorf("PostgreSQL is not installed (initdb not found): run make deps")
	}
	dir, err := os.MkdirTemp("", "agenthost-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			return nil, fmt.Errorf("running as root and no user nobody to run PostgreSQL as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.uid = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chmod(dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := s.run(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	// postgres binds the port itself, so a free one is picked by binding and closing it;
	// another process can take it in between, and then postgres exits: pick again.
	for attempt := 1; ; attempt++ {
		if s.port, err = pickPort(); err != nil {
			return nil, err
		}
		err = s.launch()
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, errPortTaken) || attempt == 5 {
			return nil, err
		}
	}
}

// pickPort returns a port no one listened on a moment ago (a variable: a test hands out
// a taken one).
var pickPort = func() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// errPortTaken is launch's answer when postgres could not bind its port.
var errPortTaken = errors.New("postgres: port already in use")

// launch starts the postgres process on s's data and port and returns once it accepts
// connections.
func (s *Server) launch() error {
	// fsync=off: what a killed server wrote is still in the OS's cache (tests never cut
	// the power). synchronous_commit stays on: with it off, a commit is acknowledged
	// before its WAL is written, and Crash loses the last ones (runs seemed to lose
	// their stored steps).
	s.cmd = exec.Command(filepath.Join(BinDir(), "postgres"), "-D", filepath.Join(s.dir, "data"), "-p", strconv.Itoa(s.port), "-h", "127.0.0.1",
		"-k", s.dir, "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=200")
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.uid, Setpgid: true}
	var logs bytes.Buffer
	s.cmd.Stdout, s.cmd.Stderr = &logs, &logs
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	cmd, exited := s.cmd, make(chan struct{})
	s.exited = exited
	go func() { cmd.Wait(); close(exited) }()   // logs is complete once exited is closed
	deadline := time.Now().Add(2 * time.Minute) // a start on a busy machine, not a wait to measure
	for {
		select {
		case <-exited:
			if strings.Contains(logs.String(), "already in use") {
				return fmt.Errorf("%w (%d):\n%s", errPortTaken, s.port, logs.String())
			}
			return fmt.Errorf("postgres exited before accepting connections:\n%s", logs.String())
		default:
		}
		ours, err := s.answers()
		if ours {
			return nil
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			return fmt.Errorf("postgres did not accept connections: %v\n%s", err, logs.String())
		}
		time.Sleep(50 * time.Millisecond) // polling for readiness, bounded by the deadline
	}
}

// answers reports whether s's own server accepts connections on its port: another
// process's PostgreSQL that took the port first is not it (its data directory differs).
func (s *Server) answers() (bool, error) {
	// Bounded: a process that holds the port and never answers must not hang the poll.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.url("postgres"))
	if err != nil {
		return false, err
	}
	defer c.Close(ctx)
	var dir string
	if err := c.QueryRow(ctx, "SHOW data_directory").Scan(&dir); err != nil {
		return false, err
	}
	if want := filepath.Join(s.dir, "data"); dir != want {
		return false, fmt.Errorf("port %d is another server's (data in %s, ours in %s)", s.port, dir, want)
	}
	return true, nil
}

// Crash stops the server as a crash would: `pg_ctl stop -m immediate` (no checkpoint,
// every connection cut, crash recovery at the next start). It returns the function that
// starts it again, on the same port and data, once it accepts connections. Tests of a
// store outage use it; the server is the process's shared one, so a test that crashes it
// must restart it before it ends.
func (s *Server) Crash(t testing.TB) (restart func()) {
	t.Helper()
	if out, err := s.run(filepath.Join(BinDir(), "pg_ctl"), "stop", "-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w"); err != nil {
		t.Fatalf("pgtest: pg_ctl stop -m immediate: %v\n%s", err, out)
	}
	<-s.exited
	return func() {
		t.Helper()
		if err := s.launch(); err != nil {
			t.Fatalf("pgtest: restart: %v", err)
		}
	}
}

func (s *Server) run(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.uid}
	cmd.Dir = s.dir
	return cmd.CombinedOutput()
}

func (s *Server) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// NewDatabase creates an empty database for the test (dropped when it ends) and
// returns its URL.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), s.dbs.Add(1))
	ctx := context.Background()
	c, err := pgx.Connect(ctx, s.url("postgres"))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, s.url("postgres"))
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return s.url(name)
}

// Stop stops the server and removes its files (TestMain calls it).
func Stop() {
	if shared == nil || shared.cmd == nil {
		return
	}
	_ = syscall.Kill(-shared.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-shared.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-shared.cmd.Process.Pid, syscall.SIGKILL)
		<-shared.exited
	}
	os.RemoveAll(shared.dir)
}

// Socket is the directory of the server's Unix socket and its port: the socket is
// DIR/.s.PGSQL.PORT.
func (s *Server) Socket() (dir string, port int) { return s.dir, s.port }
