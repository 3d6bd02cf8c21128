package store

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// bigDB writes a valid store with enough entries to span many pages.
func bigDB(t *testing.T, path string) {
	t.Helper()
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	var es []loop.Entry
	for i := int64(1); i <= 400; i++ {
		es = append(es, msgEntry(i, strings.Repeat("x", 200)))
	}
	if err := s.Append(context.Background(), "a", es...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
}

// CorruptStores are the broken sessions.db files hole 6 covers, with the error each
// must give; host and cmd tests reuse them.
var corruptStores = []struct {
	name string
	make func(t *testing.T, path string)
	want string
}{
	{"garbage", func(t *testing.T, path string) {
		os.WriteFile(path, []byte(strings.Repeat("this is not sqlite\n", 300)), 0o644)
	}, "file is not a database"},
	{"directory", func(t *testing.T, path string) { os.Mkdir(path, 0o755) }, "is a directory, not a database file"},
	{"truncated", func(t *testing.T, path string) {
		bigDB(t, path)
		fi, _ := os.Stat(path)
		if err := os.Truncate(path, fi.Size()/2); err != nil {
			t.Fatal(err)
		}
	}, "database file is truncated"},
	{"truncated header", func(t *testing.T, path string) {
		bigDB(t, path)
		os.Truncate(path, 50)
	}, "database disk image is malformed"},
}

func TestHole6_CorruptStoreIsAClearError(t *testing.T) {
	for _, tc := range corruptStores {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sessions.db")
			tc.make(t, path)
			s, err := OpenSQLite(path)
			if s != nil || err == nil || !strings.HasPrefix(err.Error(), "open session store "+path+": ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, %v; want an error naming %s with %q", s, err, path, tc.want)
			}
			if err := s.Close(); err != nil { // a nil store closes quietly
				t.Fatal(err)
			}
		})
	}
}

// An unreadable file: chmod 000 stops anyone but root, so as root the open runs in a
// child process (this test binary) with the uid of nobody.
const unreadableEnv = "AGENTHOST_STORE_UNREADABLE"

func openUnreadable(path string) {
	_, err := OpenSQLite(path)
	fmt.Print(err)
	os.Exit(0)
}

func TestHole6_UnreadableStoreIsAClearError(t *testing.T) {
	dir, err := os.MkdirTemp("", "unreadable-") // not t.TempDir: its parent is 0700
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	path := filepath.Join(dir, "sessions.db")
	bigDB(t, path)
	os.Chmod(path, 0)
	want := "open session store " + path + ": open " + path + ": permission denied"
	if os.Geteuid() != 0 {
		if _, err := OpenSQLite(path); err == nil || err.Error() != want {
			t.Fatalf("got %v, want %q", err, want)
		}
		return
	}
	bin := filepath.Join(dir, "store.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), unreadableEnv+"="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	if err != nil || string(out) != want {
		t.Fatalf("as nobody: %q %v; want %q", out, err, want)
	}
}
