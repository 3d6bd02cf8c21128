package postgres

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/access/accesstest"
	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/audit/audittest"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/memory/memorytest"
	"github.com/agenthost/agenthost/store/pgtest"
	"github.com/agenthost/agenthost/store/storetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

func open(t *testing.T, url string) *Store {
	t.Helper()
	s, err := Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestPostgresStoreConforms(t *testing.T) {
	srv := pgtest.Start(t)
	storetest.Run(t, func(t *testing.T) loop.SessionStore { return open(t, srv.NewDatabase(t)) })
}

// Two stores on one database are two processes: for one session, exactly one of them
// gets the lease, however they race.
func TestTwoProcessesRacingForOneSessionLease(t *testing.T) {
	url := pgtest.Start(t).NewDatabase(t)
	a, b := open(t, url), open(t, url)
	for round := range 20 {
		session := "s" + string(rune('a'+round))
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, st := range []*Store{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = st.AcquireLease(context.Background(), loop.Lease{SessionID: session, RunID: "r", PID: i + 1,
					Host: "h", Instance: "i", Heartbeat: time.Now()}, func(loop.Lease) bool { return true })
			}()
		}
		wg.Wait()
		busy := 0
		for _, err := range errs {
			if errors.Is(err, loop.ErrSessionBusy) {
				busy++
			} else if err != nil {
				t.Fatal(err)
			}
		}
		if busy != 1 {
			t.Fatalf("round %d: %d refusals, want exactly 1 (%v)", round, busy, errs)
		}
	}
}

// Several processes opening a new database at once migrate it once.
func TestMigrationFromManyOpenersAtOnce(t *testing.T) {
	url := pgtest.Start(t).NewDatabase(t)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(context.Background(), url)
			if err == nil {
				s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	s := open(t, url)
	var v, rows int
	if err := s.db.pool.QueryRow(context.Background(), `SELECT MAX(version), COUNT(*) FROM agenthost_schema`).Scan(&v, &rows); err != nil || v != SchemaVersion || rows != 1 {
		t.Fatalf("schema version %d in %d rows (%v)", v, rows, err)
	}
}

// A database from a newer agenthost is refused with a clear error; a bad URL and an
// unreachable server are errors that name the server and never the password.
func TestOpenErrorsAreClear(t *testing.T) {
	url := pgtest.Start(t).NewDatabase(t)
	s := open(t, url)
	if _, err := s.db.pool.Exec(context.Background(), `UPDATE agenthost_schema SET version = 99`); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), url); err == nil || !strings.Contains(err.Error(), "schema version 99, newer than this agenthost knows") {
		t.Fatalf("newer schema: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Open(ctx, "postgres://u:s3cret-pw@127.0.0.1:1/x?sslmode=disable&connect_timeout=2")
	if err == nil || strings.Contains(err.Error(), "s3cret-pw") || !strings.Contains(err.Error(), "127.0.0.1:1/x") {
		t.Fatalf("unreachable server: %v", err)
	}
	if _, err := Open(ctx, "postgres://%zz"); err == nil || !strings.Contains(err.Error(), "bad url") {
		t.Fatalf("bad url: %v", err)
	}
}

// A stored entry that is not valid JSON for an entry is a clear error, not a panic.
func TestCorruptEntryIsAClearError(t *testing.T) {
	s := open(t, pgtest.Start(t).NewDatabase(t))
	ctx := context.Background()
	if _, err := s.db.pool.Exec(ctx, `INSERT INTO entries (session, seq, run_id, time, kind, body) VALUES ('s', 1, 'r', now(), 'message', '{"seq": "one"}')`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, "s"); err == nil || !strings.Contains(err.Error(), `load session "s": entry 1 is not a valid entry`) {
		t.Fatalf("corrupt entry: %v", err)
	}
}

// An append by another process wakes the watchers of that session (LISTEN/NOTIFY), and
// only them.
func TestWatchWakesOnAnotherProcesssAppend(t *testing.T) {
	url := pgtest.Start(t).NewDatabase(t)
	a, b := open(t, url), open(t, url)
	ctx := context.Background()
	mine, stop := a.Watch(ctx, "watched")
	defer stop()
	other, stopOther := a.Watch(ctx, "elsewhere")
	defer stopOther()
	entry := loop.Entry{Seq: 1, RunID: "r", Time: time.Now(), Kind: loop.EntryMessage, Message: &loop.Message{Role: loop.RoleUser}}
	if err := b.Append(ctx, "watched", entry); err != nil {
		t.Fatal(err)
	}
	select {
	case <-mine:
	case <-time.After(30 * time.Second): // a hang guard
		t.Fatal("the watcher was not woken by the other process's append")
	}
	select {
	case <-other:
		t.Fatal("a watcher of another session was woken")
	default:
	}
}

func TestPostgresMemoryConforms(t *testing.T) {
	srv := pgtest.Start(t)
	memorytest.Run(t, func(t *testing.T) memory.Store { return open(t, srv.NewDatabase(t)) })
}

func TestPostgresAuditConforms(t *testing.T) {
	srv := pgtest.Start(t)
	audittest.Run(t, func(t *testing.T) (audit.Store, audittest.Tamper) {
		s := open(t, srv.NewDatabase(t))
		return s, func(t *testing.T, stmt string) {
			if _, err := s.db.pool.Exec(context.Background(), stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
	})
}

func TestPostgresAccessConforms(t *testing.T) {
	srv := pgtest.Start(t)
	accesstest.Run(t, func(t *testing.T) access.Store { return open(t, srv.NewDatabase(t)) })
}
