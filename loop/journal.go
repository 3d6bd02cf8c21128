package loop

import (
	"context"
	"fmt"
	"sync"
)

// journal is a run's record keeper: it numbers and delivers events, queues the ones
// the session keeps, and appends them with the run's entries to the store. It knows
// nothing about the loop's decisions; the run owns one and calls it.
type journal struct {
	sessions SessionStore
	ctx      context.Context // for store writes: not cancelled, so an abort still stores its end
	session  string
	runID    string
	agent    string
	traceID  string
	clock    Driver // the clock and the store appends (Driver.Append)
	emitFn   func(Event)

	// mu serialises emits: the run's own, and plugins' reports (Notify) from tool
	// goroutines. ended is set by run_finished: later reports are not the run's.
	mu      sync.Mutex
	ended   bool
	notices int // plugin reports so far (notify.go)

	evSeq   int64   // last event seq of the session (L17)
	seq     int64   // last stored entry seq of the session
	pending []Event // events not yet stored (flushed with the next append)
}

// emit sends an event and queues it for the store. Deltas are not stored: their content
// is in the assistant_message that follows.
func (j *journal) emit(t EventType, data any) {
	j.mu.Lock()
	j.emitLocked(t, data)
	if t == EventRunFinished {
		j.ended = true
	}
	j.mu.Unlock()
}

func (j *journal) emitLocked(t EventType, data any) {
	j.evSeq++
	e := Event{Seq: j.evSeq, Time: j.clock.Now(), SessionID: j.session, RunID: j.runID,
		Agent: j.agent, Type: t, Data: data, TraceID: j.traceID}
	if j.emitFn != nil {
		j.emitFn(e)
	}
	if t != EventModelDelta {
		j.pending = append(j.pending, e)
	}
}

// store appends the queued events and extra entries, numbering them. The events are
// copied once per batch, so the queue's array is reused.
func (j *journal) store(extra ...Entry) error {
	j.mu.Lock()
	n := len(j.pending) + len(extra)
	if n == 0 {
		j.mu.Unlock()
		return nil
	}
	batch := make([]Entry, 0, n)
	if len(j.pending) > 0 {
		evs := append([]Event(nil), j.pending...)
		for i := range evs {
			batch = append(batch, Entry{RunID: j.runID, Time: evs[i].Time, Kind: EntryEvent, Event: &evs[i]})
		}
		j.pending = j.pending[:0]
	}
	j.mu.Unlock()
	batch = append(batch, extra...)
	for i := range batch {
		j.seq++
		batch[i].Seq = j.seq
	}
	if err := j.clock.Append(j.ctx, j.sessions, j.session, batch...); err != nil {
		return fmt.Errorf("store session %q: %w", j.session, err)
	}
	return nil
}
