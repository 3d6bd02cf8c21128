package pgtest

import (
	"bytes"
	"context"
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
	dir  string
	port int
	cmd  *exec.Cmd
	uid  *syscall.Credential
	dbs  atomic.Int64
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	if err := s.launch(); err != nil {
		return nil, err
	}
	return s, nil
}

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
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := pgx.Connect(context.Background(), s.url("postgres"))
		if err == nil {
			c.Close(context.Background())
			return nil
		}
		if time.Now().After(deadline) {
			s.cmd.Process.Kill()
			return fmt.Errorf("postgres did not accept connections: %v\n%s", err, logs.String())
		}
		time.Sleep(50 * time.Millisecond) // polling for readiness, bounded by the deadline
	}
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
	s.cmd.Wait()
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
	done := make(chan struct{})
	go func() { shared.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-shared.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	os.RemoveAll(shared.dir)
}

// Socket is the directory of the server's Unix socket and its port: the socket is
// DIR/.s.PGSQL.PORT.
func (s *Server) Socket() (dir string, port int) { return s.dir, s.port }
