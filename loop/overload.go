package loop

import (
	"errors"
	"fmt"
	"time"
)

// EventQueued is emitted by the host's admission (host/admission.go), not by the loop:
// the run waits for a place among the runs in flight, at Position in the queue (1: next).
// It comes before run_started, again whenever the position changes, and is not stored
// (the run has not begun).
const EventQueued EventType = "queued"

// QueuedData is the payload of EventQueued.
type QueuedData struct {
	Position int `json:"position"`
}

// ErrOverloaded says a run was refused at the door before it began because the host is
// at capacity (its runs in flight and queue are full) or its user is at a limit (runs in
// flight, runs per minute): the caller may try again later. Every surface maps it to its
// own form (HTTP and AG-UI: 429 with Retry-After).
var ErrOverloaded = errors.New("overloaded")

// OverloadError is an ErrOverloaded refusal: why, and when a retry may succeed.
type OverloadError struct {
	Reason     string        // "the host's 8 runs and queue of 16 are full", …
	RetryAfter time.Duration // at least a second
}

func (e *OverloadError) Error() string {
	return fmt.Sprintf("overloaded: %s; retry after %s", e.Reason, e.RetryAfter)
}

func (e *OverloadError) Unwrap() error { return ErrOverloaded }

// RetryAfterOf is the wait an ErrOverloaded refusal in err's chain asks for, rounded up
// to whole seconds (at least one), and whether err is one.
func RetryAfterOf(err error) (seconds int, ok bool) {
	var oe *OverloadError
	if !errors.As(err, &oe) {
		return 0, false
	}
	s := int((oe.RetryAfter + time.Second - 1) / time.Second)
	return max(s, 1), true
}
