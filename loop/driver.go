package loop

import (
	"context"
	"math/rand/v2"
	"time"
)

// Driver is everything the loop does to the outside world: the clock, the wait between
// retries and its jitter, the spawning of parallel tool calls, and every model call, tool
// call and store append. The loop decides; the driver performs. Another driver (a
// deterministic test, a durable workflow engine that records each call as an activity
// and replays it after a crash) can therefore run the same loop code. Implementations
// must be safe for concurrent use; embed GoDriver to change only some of it.
type Driver interface {
	Now() time.Time
	// Sleep waits d or until ctx ends, returning context.Cause(ctx) then.
	Sleep(ctx context.Context, d time.Duration) error
	// Jitter spreads a backoff delay so that clients do not retry in step.
	Jitter(d time.Duration) time.Duration
	// Go runs f concurrently (a parallel tool call).
	Go(f func())
	// StreamModel starts one model call (one attempt; the loop retries).
	StreamModel(ctx context.Context, m Model, req Request) (Stream, error)
	// InvokeTool runs one tool call that passed every check (the pipeline's "invoked" stage).
	InvokeTool(ctx context.Context, t Tool, call ToolCall) (ToolResult, error)
	// Append stores entries of a session, in order, atomically.
	Append(ctx context.Context, st SessionStore, session string, entries ...Entry) error
}

// GoDriver is the default Driver: the wall clock, timers, ±20% jitter, goroutines, and
// direct calls of the model, the tools and the store.
type GoDriver struct{}

func (GoDriver) StreamModel(ctx context.Context, m Model, req Request) (Stream, error) {
	return m.Stream(ctx, req)
}

func (GoDriver) InvokeTool(ctx context.Context, t Tool, call ToolCall) (ToolResult, error) {
	return t.Call(ctx, call)
}

func (GoDriver) Append(ctx context.Context, st SessionStore, session string, entries ...Entry) error {
	return st.Append(ctx, session, entries...)
}

func (GoDriver) Now() time.Time { return time.Now() }

func (GoDriver) Sleep(ctx context.Context, d time.Duration) error { return sleepCtx(ctx, d) }

func (GoDriver) Jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

func (GoDriver) Go(f func()) { go f() }
