package sandbox

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// A per-call timeout must also end a guest that is not running but waiting.
// wazero's WithCloseOnContextDone stops a guest only at a function call or a
// loop header in compiled code; a guest blocked inside a host function never
// reaches one. So every host function that can block has to end on its own
// when the call's context does:
//
//   - sleeping (Go's time.Sleep, C's sleep, Rust's thread::sleep): all are
//     WASI poll_oneoff with a clock subscription, which wazero serves with
//     the module's sys.Nanosleep. That function takes no context, so each
//     instance gets its own (callClock), which waits on the context of the
//     call the instance is serving;
//   - stdin: a fixed buffer (wasi: the arguments; extism: empty), never a
//     descriptor that can block, so poll_oneoff and fd_read on it return;
//   - mounted files: a FIFO, socket or device planted in a mount is refused
//     at open (rootFS.OpenFile), so no read or open waits for a writer;
//   - HTTP (Extism's http_request): the request carries the call's context;
//   - the Host's functions (create_message, kv_*) get the call's context.
//
// When the sleep ends early the guest resumes, reaches a check, and wazero
// ends the call; the call then fails as "timed out" (or with the caller's
// cancellation) and the instance is disposed of, like any failed call's.

// callClock is an instance's sys.Nanosleep. An instance serves one call at
// a time, but wazero calls nanosleep without a context, so the call's done
// channel is kept here for the duration of the call (set and read under a
// lock: the sleep may run on another goroutine than the one that set it).
type callClock struct {
	mu   sync.Mutex
	done <-chan struct{} // nil between calls
}

// serve makes sleeps end when ctx does, until the returned func is called.
func (c *callClock) serve(ctx context.Context) (end func()) {
	c.mu.Lock()
	c.done = ctx.Done()
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		c.done = nil
		c.mu.Unlock()
	}
}

// nanosleep sleeps ns or until the current call ends, whichever is first.
// Outside a call (a module's start function while it is instantiated) it
// sleeps for real.
func (c *callClock) nanosleep(ns int64) {
	c.mu.Lock()
	done := c.done
	c.mu.Unlock()
	sleepOrDone(ns, done)
}

// sleepStarted, when set, is called as a guest's sleep begins: tests use it
// to cancel a call once its guest is certainly asleep.
var sleepStarted atomic.Pointer[func()]

// sleepOrDone waits ns nanoseconds or until done is closed.
func sleepOrDone(ns int64, done <-chan struct{}) {
	if ns <= 0 {
		return
	}
	if f := sleepStarted.Load(); f != nil {
		(*f)()
	}
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	select {
	case <-t.C:
	case <-done:
	}
}
