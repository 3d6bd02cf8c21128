package loop

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// outageStore is a MemoryStore whose lease releases fail while down is set, as a
// database that is restarting does.
type outageStore struct {
	*MemoryStore
	down atomic.Bool
}

func (s *outageStore) ReleaseLease(ctx context.Context, l Lease) error {
	if s.down.Load() {
		return errors.New("connection refused")
	}
	return s.MemoryStore.ReleaseLease(ctx, l)
}

// A run that ends while its store is unreachable cannot give its lease back then; it
// does once the store answers again, so that the next run on the session (a retry of
// the run's job) need not wait LeaseTTL.
func TestLease_AReleaseDuringAnOutageIsRetriedWhenTheStoreAnswers(t *testing.T) {
	defer func(d time.Duration) { releaseEvery = d }(releaseEvery)
	releaseEvery = time.Millisecond
	st := &outageStore{MemoryStore: NewMemoryStore()}
	l := newLease("s", "r")
	if _, err := st.AcquireLease(context.Background(), l, func(Lease) bool { return true }); err != nil {
		t.Fatal(err)
	}
	st.down.Store(true)
	h := &heldSession{st: st, lease: &l}
	h.release()
	st.mu.Lock()
	_, held := st.leases["s"]
	st.mu.Unlock()
	if !held {
		t.Fatal("released while the store was down")
	}
	st.down.Store(false)
	deadline := time.Now().Add(10 * time.Second)
	for {
		st.mu.Lock()
		_, held := st.leases["s"]
		st.mu.Unlock()
		if !held {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the lease was not released once the store answered")
		}
		time.Sleep(time.Millisecond) // polling, bounded by the deadline
	}
}
