package loop

import (
	"context"
	"math/rand/v2"
	"time"
)

// Driver is how the loop reaches time and concurrency: the clock, the wait between
// retries and its jitter, and the spawning of parallel tool calls. Together with the
// injected Model, Tools and SessionStore it is everything the loop does to the outside
// world, so another driver (a deterministic test, a durable workflow engine) can run the
// same loop code. Implementations must be safe for concurrent use.
type Driver interface {
	Now() time.Time
	// Sleep waits d or until ctx ends, returning context.Cause(ctx) then.
	Sleep(ctx context.Context, d time.Duration) error
	// Jitter spreads a backoff delay so that clients do not retry in step.
	Jitter(d time.Duration) time.Duration
	// Go runs f concurrently (a parallel tool call).
	Go(f func())
}

// GoDriver is the default Driver: the wall clock, timers, ±20% jitter and goroutines.
type GoDriver struct{}

func (GoDriver) Now() time.Time { return time.Now() }

func (GoDriver) Sleep(ctx context.Context, d time.Duration) error { return sleepCtx(ctx, d) }

func (GoDriver) Jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

func (GoDriver) Go(f func()) { go f() }
