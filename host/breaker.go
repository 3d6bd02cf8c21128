package host

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// breaker is a provider's circuit breaker. After threshold consecutive failed requests
// it opens: the chain skips the provider for cooldown. Then it is half open: one call
// may probe it; success closes it, failure opens it again. Each change is a circuit
// event of the run whose call caused it.
//
// One adapter process failing is one failure, however many calls it ended: with thirty
// runs streaming, a crash used to count thirty and open the breaker, and every run then
// waited out the cool-down although the adapter was restarted at the next call. Calls
// a crash ended carry the process's number (failedProcess); the breaker counts the
// first and ignores the rest while closed. A half-open probe's failure always counts,
// or the probe would never end.
type breaker struct {
	name      string
	threshold int
	cooldown  time.Duration
	now       func() time.Time

	mu        sync.Mutex
	state     string // closed | open | half_open
	failures  int
	openUntil time.Time
	probing   bool     // a half-open probe is in flight
	counted   []uint64 // the adapter processes whose failure was counted, the latest last
}

// countedProcesses is how many failed processes a breaker remembers: a call of a crashed
// process can report its failure late (the client waits up to 3 s for the exit), after
// the restarted process has failed too, so more than the last one.
const countedProcesses = 8

func newBreaker(name string, threshold int, cooldown time.Duration) *breaker {
	if threshold <= 0 {
		threshold = 5
	}
	if cooldown <= 0 {
		cooldown = 30 * time.Second
	}
	return &breaker{name: name, threshold: threshold, cooldown: cooldown, now: time.Now, state: "closed"}
}

// allow reports whether a call may go to the provider now, moving an open breaker
// whose cool-down has passed to half open (this call is its probe).
func (b *breaker) allow(ctx context.Context) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case "open":
		if b.now().Before(b.openUntil) {
			return false
		}
		b.set(ctx, "half_open", fmt.Sprintf("the %s cool-down has passed: one call probes it", b.cooldown))
		b.probing = true
		return true
	case "half_open":
		if b.probing {
			return false
		}
		b.probing = true
		return true
	}
	return true
}

// wouldAllow is allow without its effects.
func (b *breaker) wouldAllow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case "open":
		return !b.now().Before(b.openUntil)
	case "half_open":
		return !b.probing
	}
	return true
}

func (b *breaker) isOpen() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state == "open"
}

// remaining is how long the breaker stays open; 0 when it is not.
func (b *breaker) remaining() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != "open" {
		return 0
	}
	return max(0, b.openUntil.Sub(b.now()))
}

func (b *breaker) failure(ctx context.Context, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if proc := failedProcess(err); proc != 0 {
		if b.state != "half_open" && slices.Contains(b.counted, proc) {
			return // this crash is counted already
		}
		if !slices.Contains(b.counted, proc) {
			b.counted = append(b.counted, proc)
			if len(b.counted) > countedProcesses {
				b.counted = b.counted[1:]
			}
		}
	}
	b.failures++
	switch {
	case b.state == "half_open":
		b.openUntil, b.probing = b.now().Add(b.cooldown), false
		b.set(ctx, "open", fmt.Sprintf("the probe failed (%v): open for %s", err, b.cooldown))
	case b.state == "closed" && b.failures >= b.threshold:
		b.openUntil = b.now().Add(b.cooldown)
		b.set(ctx, "open", fmt.Sprintf("%d consecutive failures, the last: %v; open for %s", b.failures, err, b.cooldown))
	}
}

func (b *breaker) success(ctx context.Context) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures = 0
	if b.state != "closed" {
		b.probing = false
		b.set(ctx, "closed", "the probe succeeded")
	}
}

// set changes the state and reports it. Caller holds mu.
func (b *breaker) set(ctx context.Context, state, reason string) {
	b.state = state
	loop.Notify(ctx, loop.CircuitData{Provider: b.name, State: state, Reason: reason})
}
