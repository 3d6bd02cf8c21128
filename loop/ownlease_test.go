package loop

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Issue 47 (disk full): a run whose lease could not be given back when it ended (the
// store failed) leaves the lease in the store, fresh and with a live pid: this process's
// own. The next run of the session in the same process (a resume) takes it at once
// instead of being refused as busy until the background release gets through; the late
// release of the old lease then removes nothing of the new holder's.
func TestLease_AnEndedRunsLeaseLeftInTheStoreIsTakenAtOnceByItsOwnProcess(t *testing.T) {
	defer func(d time.Duration) { releaseEvery = d }(releaseEvery)
	releaseEvery = time.Hour // the background retry never comes during the test
	st := &outageStore{MemoryStore: NewMemoryStore()}
	st.down.Store(true)
	if _, err := leaseAgent(t, st, answerModel{}).Run(context.Background(), userInput("s", "r1")); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	old, left := st.leases["s"]
	st.mu.Unlock()
	if !left || old.RunID != "r1" || !old.Alive(time.Now()) {
		t.Fatalf("the ended run's lease is not left behind, alive by its heartbeat and pid: %+v %v", old, left)
	}
	st.down.Store(false)

	m := answerModel{gate: make(chan struct{}), started: make(chan struct{}, 1)}
	done := make(chan error, 1)
	go func() { _, err := leaseAgent(t, st, m).Run(context.Background(), userInput("s", "r2")); done <- err }()
	select {
	case <-m.started:
	case err := <-done:
		t.Fatalf("the next run of the session was refused: %v", err)
	}
	if err := st.ReleaseLease(context.Background(), old); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("the old lease's late release: %v, want ErrLeaseLost", err)
	}
	st.mu.Lock()
	now := st.leases["s"]
	st.mu.Unlock()
	if now.RunID != "r2" {
		t.Fatalf("the session's lease after the old one's late release: %+v", now)
	}
	// While r2 lives, its lease is alive to this process too: a third run is refused.
	if _, err := leaseAgent(t, st, answerModel{}).Run(context.Background(), userInput("s", "r3")); !errors.Is(err, ErrSessionBusy) {
		t.Fatalf("a run beside a live one of this process: %v, want ErrSessionBusy", err)
	}
	close(m.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
