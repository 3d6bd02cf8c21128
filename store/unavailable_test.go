package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// openLogged opens a store at path whose reports go to the returned buffer.
func openLogged(t *testing.T, path string) (*SQLite, *bytes.Buffer) {
	t.Helper()
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var log bytes.Buffer
	s.SetLogger(slog.New(slog.NewTextHandler(&log, nil)))
	return s, &log
}

func wantGone(t *testing.T, err error) {
	t.Helper()
	var u interface{ StoreUnavailable() bool }
	if !errors.Is(err, ErrDatabaseGone) || !errors.As(err, &u) {
		t.Fatalf("got %v, want ErrDatabaseGone marked unavailable", err)
	}
}

func removeDatabase(t *testing.T, path string) {
	t.Helper()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
}

func TestWritesAfterTheDatabaseFileIsDeletedAreRefusedAndLoggedOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s, log := openLogged(t, path)
	ctx := context.Background()
	if err := s.Append(ctx, "a", msgEntry(1, "kept")); err != nil {
		t.Fatal(err)
	}
	removeDatabase(t, path)
	wantGone(t, s.Append(ctx, "a", msgEntry(2, "lost")))
	_, err := s.AcquireLease(ctx, loop.Lease{SessionID: "b", RunID: "r", PID: 1, Instance: "i"}, func(loop.Lease) bool { return true })
	wantGone(t, err)
	wantGone(t, s.KVSet(ctx, "p", "k", []byte("v")))
	if n := strings.Count(log.String(), "refusing reads and writes"); n != 1 || !strings.Contains(log.String(), path+" no longer exists") {
		t.Fatalf("logged %d times:\n%s", n, log.String())
	}
}

func TestWritesAfterTheDatabaseFileIsReplacedAreRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sessions.db")
	s, log := openLogged(t, path)
	ctx := context.Background()
	if err := s.Append(ctx, "a", msgEntry(1, "kept")); err != nil {
		t.Fatal(err)
	}
	other, err := OpenSQLite(filepath.Join(dir, "other.db"))
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	if err := os.Rename(filepath.Join(dir, "other.db"), path); err != nil {
		t.Fatal(err)
	}
	wantGone(t, s.Append(ctx, "a", msgEntry(2, "lost")))
	if !strings.Contains(log.String(), path+" is another file now") {
		t.Fatalf("log:\n%s", log.String())
	}
}

// Reads are refused too once the file is gone: SQLite still reads the deleted inode,
// so a session listed or loaded then would be one the next start does not have. Put
// back (renamed back), the file serves reads and writes again.
func TestReadsAfterTheDatabaseFileIsDeletedAreRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sessions.db")
	s, log := openLogged(t, path)
	ctx := context.Background()
	if err := s.Append(ctx, "a", msgEntry(1, "kept")); err != nil {
		t.Fatal(err)
	}
	if err := s.KVSet(ctx, "p", "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	aside := filepath.Join(dir, "aside.db")
	if err := os.Rename(path, aside); err != nil {
		t.Fatal(err)
	}
	_, err := s.Load(ctx, "a")
	wantGone(t, err)
	_, err = s.Runs(ctx, "a")
	wantGone(t, err)
	_, err = s.Sessions(ctx)
	wantGone(t, err)
	_, _, err = s.KVGet(ctx, "p", "k")
	wantGone(t, err)
	if n := strings.Count(log.String(), "refusing reads and writes"); n != 1 {
		t.Fatalf("logged %d times:\n%s", n, log.String())
	}
	if err := os.Rename(aside, path); err != nil {
		t.Fatal(err)
	}
	es, err := s.Load(ctx, "a")
	if err != nil || len(es) != 1 {
		t.Fatalf("after the file is back: %v %v", es, err)
	}
}

func TestASequenceGapIsNotAStorageFailure(t *testing.T) {
	s := open(t)
	err := s.Append(context.Background(), "a", msgEntry(2, "gap"))
	var u interface{ StoreUnavailable() bool }
	if err == nil || errors.As(err, &u) {
		t.Fatalf("got %v: a caller's mistake marked as the storage's", err)
	}
}

func TestAFullDatabaseIsAStorageFailure(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	// The write connection may not grow the file: SQLite answers SQLITE_FULL, as it does
	// on a full disk.
	var pages int
	if err := s.w.conn.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA max_page_count = %d`, pages)); err != nil {
		t.Fatal(err)
	}
	err := s.Append(ctx, "a", msgEntry(1, strings.Repeat("x", 1<<20)))
	var u interface{ StoreUnavailable() bool }
	if err == nil || !errors.As(err, &u) || !strings.Contains(err.Error(), "full") {
		t.Fatalf("got %v, want a full database marked unavailable", err)
	}
}
