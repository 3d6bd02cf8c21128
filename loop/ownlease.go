package loop

import (
	"sync"
	"time"
)

// Leases of this process. A lease is judged alive by its heartbeat and its pid
// (Lease.Alive), which is all another process can know. This process knows more about
// its own leases (those with its Instance): one that no run or holder of it holds any
// more is dead, however fresh its heartbeat. Such a lease is left behind when giving it
// back failed (a disk full, a database restarting: releaseLease retries in the
// background), and without this the next run or resume of the session in this process
// was refused as busy (HTTP 409) until the retry got through. Taking it over is safe:
// its holder has ended, and a late release of it matches nothing (Lease.Same), so it
// removes nothing of the new holder's.
//
// A lease is registered before it is stored (so a second taker in this process never
// sees a stored lease of ours that is not yet registered) and unregistered when it is
// given back, taken back by the store with the run's final record, or not obtained.

type ownKey struct{ session, run string }

var ownLeases = struct {
	sync.Mutex
	n map[ownKey]int // holders of (session, run id) in this process
}{n: map[ownKey]int{}}

func holdOwn(l Lease) {
	ownLeases.Lock()
	ownLeases.n[ownKey{l.SessionID, l.RunID}]++
	ownLeases.Unlock()
}

func dropOwn(l Lease) {
	ownLeases.Lock()
	k := ownKey{l.SessionID, l.RunID}
	if ownLeases.n[k]--; ownLeases.n[k] <= 0 {
		delete(ownLeases.n, k)
	}
	ownLeases.Unlock()
}

// leaseAlive is how this process judges a lease it finds on a session it wants: one of
// its own is alive while something here holds it; another process's by Lease.Alive.
func leaseAlive(l Lease, now time.Time) bool {
	if l.Instance == instanceID && l.PID == pid {
		ownLeases.Lock()
		defer ownLeases.Unlock()
		return ownLeases.n[ownKey{l.SessionID, l.RunID}] > 0
	}
	return l.Alive(now)
}
