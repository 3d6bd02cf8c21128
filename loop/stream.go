package loop

import (
	"context"
	"iter"
	"sync"
	"time"
)

// RunStream runs in a new goroutine and delivers every event on the returned channel,
// which is closed after run_finished. The run never waits for the reader: events queue
// in memory, and a reader that stops reading only leaks the queue until ctx ends.
func (a *Agent) RunStream(ctx context.Context, in RunInput) <-chan Event {
	ch, _ := a.stream(ctx, in)
	return ch
}

// Events runs and yields every event in order, then, if the run failed, one last pair
// with a zero Event and the run's error. Breaking out of the loop aborts the run and
// waits for it to end, so the session is free again when Events returns.
func (a *Agent) Events(ctx context.Context, in RunInput) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		ch, result := a.stream(ctx, in)
		for e := range ch {
			if !yield(e, nil) {
				cancel(ErrAborted)
				for range ch { // let the run store its end
				}
				return
			}
		}
		if err := result(); err != nil {
			yield(Event{}, err)
		}
	}
}

// stream runs in a new goroutine. A queue between the run and the channel means the run
// never blocks on a slow or gone reader; the forwarder gives up when ctx ends. result
// returns the run's error once the channel is closed.
func (a *Agent) stream(ctx context.Context, in RunInput) (<-chan Event, func() error) {
	ch := make(chan Event, 64)
	var (
		mu     sync.Mutex
		queue  []Event
		closed bool
		runErr error
		wake   = make(chan struct{}, 1)
	)
	push := func(e Event) {
		mu.Lock()
		queue = append(queue, e)
		mu.Unlock()
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	go func() { // the run
		emitted := false
		_, err := a.RunWith(ctx, in, func(e Event) { emitted = true; push(e) })
		if err != nil && !emitted {
			// The run never started: report it in the event vocabulary anyway.
			now := time.Now()
			push(Event{Seq: 1, Time: now, SessionID: in.SessionID, RunID: in.RunID, Agent: a.cfg.Name,
				Type: EventError, Data: &ErrorData{Kind: "invalid_input", Message: err.Error()}})
			push(Event{Seq: 2, Time: now, SessionID: in.SessionID, RunID: in.RunID, Agent: a.cfg.Name,
				Type: EventRunFinished, Data: &RunFinishedData{Status: StatusFailed, Reason: ReasonError}})
		}
		mu.Lock()
		closed, runErr = true, err
		mu.Unlock()
		select {
		case wake <- struct{}{}:
		default:
		}
	}()
	go func() { // the forwarder
		defer close(ch)
		for {
			mu.Lock()
			batch, end := queue, closed
			queue = nil
			mu.Unlock()
			for _, e := range batch {
				select {
				case ch <- e:
				case <-ctx.Done():
					if !a.drainAfterCancel(ch, e) {
						return
					}
				}
			}
			if end && len(batch) == 0 {
				return
			}
			if !end {
				<-wake
			}
		}
	}()
	return ch, func() error {
		mu.Lock()
		defer mu.Unlock()
		return runErr
	}
}

// drainAfterCancel tries once more to deliver e after ctx ended, without blocking: a
// reader still reading (Events draining after a break) gets the run's last events; a
// reader that is gone does not hold the forwarder.
func (a *Agent) drainAfterCancel(ch chan<- Event, e Event) bool {
	select {
	case ch <- e:
		return true
	default:
		return false
	}
}
