package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/loop"
	"modernc.org/sqlite"
)

// holdWriter makes the store's next write wait until the returned func is called, so
// that the writes queued meanwhile form one group.
func holdWriter(t *testing.T, s *SQLite) (release func()) {
	t.Helper()
	started, gate := make(chan struct{}), make(chan struct{})
	go s.w.write(context.Background(), func(ctx context.Context, tx *wtx) error {
		close(started)
		<-gate
		return nil
	})
	<-started
	return func() { close(gate) }
}

// queued waits until n writes wait in the queue.
func queued(s *SQLite, n int) {
	for {
		s.w.q.mu.Lock()
		k := len(s.w.q.ops)
		s.w.q.mu.Unlock()
		if k >= n {
			return
		}
		runtime.Gosched()
	}
}

// Appends that arrive while a commit is in progress share the next transaction: fifty
// of them cost one commit, and each caller gets its own result once it is durable.
func TestGroupCommitWritesConcurrentAppendsInOneTransaction(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	release := holdWriter(t, s)
	before := s.w.commits.Load()
	var wg sync.WaitGroup
	errs := make([]error, 50)
	for i := range errs {
		wg.Go(func() { errs[i] = s.Append(ctx, fmt.Sprint("s", i), msgEntry(1, "x")) })
	}
	queued(s, 50)
	release()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	if got := s.w.commits.Load() - before; got != 2 { // the held write's, then the group's
		t.Fatalf("%d commits, want 2", got)
	}
	for i := range errs {
		if es, err := s.Load(ctx, fmt.Sprint("s", i)); err != nil || len(es) != 1 {
			t.Fatalf("session s%d: %d entries, %v", i, len(es), err)
		}
	}
}

// A write that fails in a group fails alone: its savepoint is rolled back, the others
// are committed.
func TestGroupCommitFailsAFailingWriteAlone(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	if err := s.Append(ctx, "a", msgEntry(1, "first")); err != nil {
		t.Fatal(err)
	}
	release := holdWriter(t, s)
	var wg sync.WaitGroup
	var good1, bad, good2 error
	wg.Go(func() { good1 = s.Append(ctx, "b", msgEntry(1, "b1"), msgEntry(2, "b2")) })
	queued(s, 1)
	wg.Go(func() { bad = s.Append(ctx, "a", msgEntry(2, "ok"), msgEntry(4, "gap")) })
	queued(s, 2)
	wg.Go(func() { good2 = s.Append(ctx, "c", msgEntry(1, "c1")) })
	queued(s, 3)
	release()
	wg.Wait()
	if good1 != nil || good2 != nil {
		t.Fatalf("good appends: %v, %v", good1, good2)
	}
	if bad == nil || bad.Error() != `session "a": append seq 4, want 3 (another run writing?)` {
		t.Fatalf("bad append: %v", bad)
	}
	for session, want := range map[string]int{"a": 1, "b": 2, "c": 1} {
		if es, _ := s.Load(ctx, session); len(es) != want {
			t.Fatalf("session %s: %d entries, want %d", session, len(es), want)
		}
	}
}

// A caller whose context ends while its write waits in the queue gets the context's
// error, and its write is not made.
func TestGroupCommitSkipsAWriteWhoseCallerLeft(t *testing.T) {
	s := open(t)
	release := holdWriter(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Append(ctx, "gone", msgEntry(1, "x")) }()
	queued(s, 1)
	cancel()
	release()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("got %v", err)
	}
	if es, _ := s.Load(context.Background(), "gone"); len(es) != 0 {
		t.Fatalf("%d entries written for a caller that left", len(es))
	}
}

// AppendRun is one transaction (its all-or-nothing is in the conformance suite).
func TestAppendRunIsOneCommit(t *testing.T) {
	s := open(t)
	before := s.w.commits.Load()
	rec := loop.RunRecord{ID: "r1", SessionID: "a", Status: loop.StatusCompleted}
	if err := s.AppendRun(context.Background(), rec, msgEntry(1, "x"), msgEntry(2, "y")); err != nil {
		t.Fatal(err)
	}
	if got := s.w.commits.Load() - before; got != 1 {
		t.Fatalf("%d commits", got)
	}
}

// cancelOnce is an SQL function for the test below: it ends the context it is given
// (through cancelHook) the first time it runs, in the middle of its statement.
var cancelHook struct {
	sync.Mutex
	cancel context.CancelFunc
}

func init() {
	sqlite.MustRegisterDeterministicScalarFunction("agenthost_test_cancel", 1, func(_ *sqlite.FunctionContext, _ []driver.Value) (driver.Value, error) {
		cancelHook.Lock()
		if c := cancelHook.cancel; c != nil {
			c()
			cancelHook.cancel = nil
		}
		cancelHook.Unlock()
		return int64(1), nil
	})
}

// A write whose caller leaves while its statement runs is finished, not interrupted:
// SQLite rolls back the whole transaction when a write statement in it is
// interrupted, which would take the group's other writes with it and leave the rest
// of the group running outside any transaction. Every write of the group is committed
// and each caller is told so.
func TestGroupCommitFinishesAWriteWhoseCallerLeavesMidStatement(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	release := holdWriter(t, s)
	var wg sync.WaitGroup
	var first, leaving, last error
	wg.Go(func() { first = s.Append(ctx, "b", msgEntry(1, "b1")) })
	queued(s, 1)
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cancelHook.Lock()
	cancelHook.cancel = cancel
	cancelHook.Unlock()
	wg.Go(func() {
		leaving = s.w.write(lctx, func(ctx context.Context, tx *wtx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO kv (plugin, key, value)
				SELECT 'p', 'k', x'00' WHERE (
					WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 2000000)
					SELECT count(*) FROM c WHERE agenthost_test_cancel(x)) > 0`)
			return err
		})
	})
	queued(s, 2)
	wg.Go(func() { last = s.Append(ctx, "c", msgEntry(1, "c1")) })
	queued(s, 3)
	release()
	wg.Wait()
	if first != nil || leaving != nil || last != nil {
		t.Fatalf("writes: %v, %v, %v", first, leaving, last)
	}
	for _, session := range []string{"b", "c"} {
		if es, err := s.Load(ctx, session); err != nil || len(es) != 1 {
			t.Fatalf("session %s: %d entries, %v", session, len(es), err)
		}
	}
	if v, ok, err := s.KVGet(ctx, "p", "k"); err != nil || !ok || string(v) != "\x00" {
		t.Fatalf("the leaving write's row: %q, %v, %v", v, ok, err)
	}
}

// Reads prepare their statements once and keep them; many at once on a fresh store
// (each the first to want its statement, or not) all get their own answer.
func TestReadsPreparedOnceAnswerConcurrentCallersAlike(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	for i := range 8 {
		if err := s.Append(ctx, fmt.Sprint("r", i), msgEntry(1, fmt.Sprint("m", i))); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			session := fmt.Sprint("r", i%8)
			es, err := s.Load(ctx, session)
			if err == nil && (len(es) != 1 || es[0].Message.Text() != fmt.Sprint("m", i%8)) {
				err = fmt.Errorf("session %s: %+v", session, es)
			}
			if _, rerr := s.Runs(ctx, session); err == nil {
				err = rerr
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	s.reads.mu.Lock()
	kept := len(s.reads.m)
	s.reads.mu.Unlock()
	if kept == 0 || kept > maxStmts {
		t.Fatalf("%d read statements kept", kept)
	}
}

// The writer prepares each statement once: fifty more appends and run records (single
// and grouped, in savepoints) add no statement to those the first ones kept.
func TestWriterPreparesEachStatementOnce(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	kept := func() int {
		s.w.stmts.mu.Lock()
		defer s.w.stmts.mu.Unlock()
		return len(s.w.stmts.m)
	}
	rec := loop.RunRecord{ID: "r1", SessionID: "a", Status: loop.StatusCompleted}
	if err := s.AppendRun(ctx, rec, msgEntry(1, "x")); err != nil {
		t.Fatal(err)
	}
	release := holdWriter(t, s)
	var wg sync.WaitGroup
	wg.Go(func() { s.Append(ctx, "g1", msgEntry(1, "x")) })
	wg.Go(func() { s.Append(ctx, "g2", msgEntry(1, "x")) })
	queued(s, 2)
	release()
	wg.Wait()
	first := kept()
	for i := range 50 {
		rec := loop.RunRecord{ID: fmt.Sprint("r", i), SessionID: fmt.Sprint("s", i), Status: loop.StatusCompleted}
		if err := s.AppendRun(ctx, rec, msgEntry(1, "x")); err != nil {
			t.Fatal(err)
		}
	}
	if got := kept(); got != first || first == 0 {
		t.Fatalf("statements kept: %d after the first writes, %d after fifty more", first, got)
	}
}
