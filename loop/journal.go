package loop

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// journal is a run's record keeper: it numbers and delivers events, queues the ones
// the session keeps and the run's entries, and writes them to the store. It knows
// nothing about the loop's decisions; the run owns one and calls it.
//
// Writes are grouped by step (rule L21): what a run produces between two calls to the
// outside world is queued, and flushed in one append just before the next model call,
// tool call or approval, and at the end of the run. A store write is what makes a run's
// progress survive a crash; the outside calls are what a crash could repeat, so that is
// where progress must be durable. One append per step instead of one per entry is most
// of what a persisted run costs (BENCHMARKS.md).
type journal struct {
	sessions SessionStore
	ctx      context.Context // for store writes: not cancelled, so an abort still stores its end
	session  string
	runID    string
	agent    string
	traceID  string
	clock    Driver // the clock and the store appends (Driver.Append)
	// started is the run's start on the clock; monotonic, that clock is the process's
	// own (GoDriver): now is then started plus the monotonic time since, one clock read
	// where time.Now takes two (see now). at, while pinned, is the one time of the
	// events and entries the run emits at one point (see pin); only the run's goroutine
	// sets or reads at and pinned (plugin reports read the clock).
	started           time.Time
	at                time.Time
	monotonic, pinned bool
	emitFn            func(Event)
	outage            outageWait        // Config.StoreOutage (outage.go)
	scrub             func(Entry) Entry // Config.Scrub
	claim             *heldSession      // the lease to take with the first write, until it is (claimwrite.go)
	writer            RunWriter         // the caller's writes ridden on the run's (runwrites.go)
	result            *ToolResult       // a direct call's result (RunInput.directResult), for its RunWriter (runwrites.go)

	// mu serialises emits: the run's own, and plugins' reports (Notify) from tool
	// goroutines. ended is set by run_finished: later reports are not the run's.
	mu      sync.Mutex
	ended   bool
	notices int // plugin reports so far (notify.go)

	evSeq int64 // last event seq of the session (L17)
	seq   int64 // last stored entry seq of the session
	// pending are the events not yet stored (flushed with the next append), written
	// where the store will get them: a flush hands its events to the batch and the next
	// ones go on in the rest of the same slab (pendingRoom), so an event is never copied.
	pending  []Event
	queued   []queuedEntry // entries not yet stored
	run      runStore      // the run record to save with the next append, if run.set (in the journal, so handing it to the store allocates nothing)
	failed   []Entry       // a batch whose write failed: written again first (seq stays gapless)
	holding  bool          // events are queued but not delivered until the end's write (endWrite)
	noDeltas bool          // the run has guardrails: no tool_result_delta (resultstream.go)
	held     int           // how many were held
	ends     []*Event      // the held events once written (as the batch holds them), for deliverEnd

	// The slab batches' entries are cut from (their events are pending's): a run's
	// entries and stored events take a few allocations, not a few per step. A batch
	// handed to the store is never written again (stores may keep the entries and the
	// events they point to).
	entrySlab []Entry

	// pl are the run's event payloads (payload.go), cut from its first event block and
	// then from chunks: an event's Data points into them.
	pl *payloads

	// What queued and ends start on, in the run's own allocation: a step queues a few
	// entries between two writes, the end holds two events.
	queuedBuf [4]queuedEntry
	endsBuf   [2]*Event
}

// cut returns n zeroed elements of a slab with capacity n, taking a new slab of at least
// size elements when the current one is short.
func cut[T any](slab *[]T, n, size int) []T {
	if cap(*slab)-len(*slab) < n {
		*slab = make([]T, 0, max(n, size))
	}
	l := len(*slab)
	*slab = (*slab)[:l+n]
	return (*slab)[l : l+n : l+n]
}

// The least a new slab of events or entries holds: a one-step run stores 16 events
// (of the 20 it emits, the 4 model_delta are not stored) and 5 messages.
const (
	eventSlabSize = 16
	entrySlabSize = 24
)

// queuedEntry is an entry waiting for the next flush, stored after the first after
// pending events.
type queuedEntry struct {
	after int
	e     Entry
}

// now is the time of an event or entry of the run. On GoDriver it is the run's start on
// the wall clock plus the time since on the monotonic clock: the same instant time.Now
// gives, read in one clock call where time.Now makes two (a wall and a monotonic
// reading; half the cost of a step's clock reads, which are a tenth of its CPU). A
// change of the wall clock during a run does not move its later events: their times
// stay in order, as seqs are. Another Driver's clock is read as it is.
func (j *journal) now() time.Time {
	if j.pinned {
		return j.at
	}
	return j.read()
}

// pin reads the clock once for what the run emits next at the same point, until unpin:
// an answer's message entry, assistant_message and usage; a call's step_start and
// tool_call; its tool_result and step_complete; the run's record, last status and
// run_finished. Nothing runs between them, so one reading is their time.
func (j *journal) pin() {
	j.at, j.pinned = j.read(), true
}

func (j *journal) unpin() { j.pinned = false }

// read reads the run's clock.
func (j *journal) read() time.Time {
	if j.monotonic {
		return j.started.Add(time.Since(j.started))
	}
	return j.clock.Now()
}

// emit sends an event and queues it for the store. Deltas are not stored: their content
// is in the assistant_message that follows.
func (j *journal) emit(t EventType, data any) {
	at := j.now()
	j.mu.Lock()
	j.emitLocked(t, data, at)
	if t == EventRunFinished {
		j.ended = true
	}
	j.mu.Unlock()
}

func (j *journal) emitLocked(t EventType, data any, at time.Time) {
	j.evSeq++
	e := Event{Seq: j.evSeq, Time: at, SessionID: j.session, RunID: j.runID,
		Agent: j.agent, Type: t, Data: data, TraceID: j.traceID}
	switch {
	case j.holding:
		j.held++
	case j.emitFn != nil:
		j.emitFn(e)
	}
	if t != EventModelDelta && t != EventToolResultDelta { // live only (L17)
		if len(j.pending) == cap(j.pending) {
			j.pendingRoom()
		}
		j.pending = append(j.pending, e)
	}
}

// pendingRoom moves the pending events to a new slab with room for more.
func (j *journal) pendingRoom() {
	s := make([]Event, len(j.pending), max(2*len(j.pending), eventSlabSize))
	copy(s, j.pending)
	j.pending = s
}

// queue adds an entry for the next flush and returns the seq it will be stored at: the
// events queued before it come first.
func (j *journal) queue(e Entry) int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.queued = append(j.queued, queuedEntry{after: len(j.pending), e: e})
	return j.seq + int64(len(j.pending)+len(j.queued))
}

// saveRun queues the run's record: it is saved with the next flush.
func (j *journal) saveRun(rec RunRecord) {
	j.mu.Lock()
	j.run = runStore{SessionStore: j.sessions, rec: rec, set: true}
	j.mu.Unlock()
}

// store queues extra entries and flushes.
func (j *journal) store(extra ...Entry) error {
	for _, e := range extra {
		j.queue(e)
	}
	return j.flush()
}

// flush writes the queued events, entries and run record in one append, numbering them.
// On failure nothing of it is stored (the session stays a prefix of what happened) and
// the batch is kept, to be written first by the next flush.
func (j *journal) flush() error {
	j.mu.Lock()
	batch := j.takeLocked()
	j.mu.Unlock()
	err := j.write(batch)
	if err != nil {
		j.mu.Lock()
		j.failed = batch
		j.mu.Unlock()
		return err
	}
	j.reportOutage()
	return nil
}

// endWrite is the run's last write: the events end emits (its status, run_finished)
// are stored with the rest, in one write, and delivered only once it succeeded, so that
// what run_finished says is what the store holds. On failure they are taken back
// (their seqs too) and the caller reports the failure with new ones.
func (j *journal) endWrite(emit func()) error {
	j.mu.Lock()
	j.holding, j.held = true, 0
	j.mu.Unlock()
	emit()
	j.mu.Lock()
	batch := j.takeLocked()
	n := j.held
	j.holding = false
	j.mu.Unlock()
	err := j.write(batch)
	j.mu.Lock()
	defer j.mu.Unlock()
	if err != nil {
		j.failed = batch[:len(batch)-n] // the held events are the batch's last entries
		j.seq -= int64(n)
		j.evSeq -= int64(n)
		j.ended = false
		return err
	}
	if j.ends == nil {
		j.ends = j.endsBuf[:0]
	}
	for _, e := range batch[len(batch)-n:] {
		j.ends = append(j.ends, e.Event) // delivered by deliverEnd, once the run has let go of its session
	}
	return nil
}

// deliverEnd delivers the events of the run's last write (its final status and
// run_finished). Agent.RunWith calls it after the run has released its session, so a
// client that starts the next run on the session as soon as it sees run_finished finds
// the session free.
func (j *journal) deliverEnd() {
	ends := j.ends
	j.ends = nil
	if j.emitFn == nil {
		return
	}
	for _, e := range ends {
		j.emitFn(*e)
	}
}

// takeLocked empties the queue into a numbered batch.
func (j *journal) takeLocked() []Entry {
	n := len(j.pending)
	if n == 0 && len(j.queued) == 0 {
		batch := j.failed
		j.failed = nil
		return batch
	}
	var batch []Entry
	if len(j.failed) > 0 {
		batch = append(append([]Entry(nil), j.failed...), make([]Entry, n+len(j.queued))...)
	} else {
		batch = cut(&j.entrySlab, n+len(j.queued), entrySlabSize)
	}
	old := len(j.failed)
	j.failed = nil
	evs := j.pending[:n:n] // the batch's from now on: the next events go after them
	k, q := old, 0
	for i := range evs {
		for ; q < len(j.queued) && j.queued[q].after <= i; q++ {
			batch[k], k = j.queued[q].e, k+1
		}
		batch[k], k = Entry{RunID: j.runID, Time: evs[i].Time, Kind: EntryEvent, Event: &evs[i]}, k+1
	}
	for ; q < len(j.queued); q++ {
		batch[k], k = j.queued[q].e, k+1
	}
	clear(j.queued)
	j.queued = j.queued[:0]
	j.pending = j.pending[n:n]
	for i := old; i < len(batch); i++ {
		j.seq++
		batch[i].Seq = j.seq
	}
	return batch
}

// write appends batch, with the run record when one is queued (only the run's own
// goroutine writes and queues a record, so j.run needs no lock here).
func (j *journal) write(batch []Entry) error {
	if len(batch) == 0 && !j.run.set {
		return nil
	}
	if j.scrub != nil {
		// Into a copy: the batch's events are still to be delivered (the run's end,
		// deliverEnd) or written again (a failed write), as the run made them.
		scrubbed := make([]Entry, len(batch))
		for i := range batch {
			scrubbed[i] = j.scrub(batch[i])
		}
		batch = scrubbed
	}
	if j.run.set {
		err := j.writeRun(batch)
		j.run.set = false
		return err
	}
	err := j.outage.retry(j.clock, func() error { return j.clock.Append(j.ctx, j.sessions, j.session, batch...) })
	if err != nil {
		return fmt.Errorf("store session %q: %w", j.session, err)
	}
	return nil
}

// runStore hands a run record to the store with an append: in the same transaction
// when the store is a RunAppender, else saved just before it.
type runStore struct {
	SessionStore
	rec  RunRecord
	set  bool
	done bool // written by AppendRun (which releases the lease with a final record)
}

func (s *runStore) Append(ctx context.Context, session string, entries ...Entry) error {
	if ra, ok := s.SessionStore.(RunAppender); ok {
		if err := ra.AppendRun(ctx, s.rec, entries...); err != nil {
			return fmt.Errorf("store session %q: %w", session, err)
		}
		s.done = true
		return nil
	}
	if err := s.SessionStore.SaveRun(ctx, s.rec); err != nil {
		return fmt.Errorf("store run %q: %w", s.rec.ID, err)
	}
	if len(entries) == 0 {
		return nil
	}
	if err := s.SessionStore.Append(ctx, session, entries...); err != nil {
		return fmt.Errorf("store session %q: %w", session, err)
	}
	return nil
}
