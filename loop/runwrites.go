package loop

import (
	"context"
	"fmt"
)

// Writes ridden on a run's own. Some callers of a run keep a record of their own next to
// it: the workflow engine stores a step's start and end (workflow, KV). Written on its
// own, each is one more commit per step; and a record of a call's end written after the
// call's end leaves a window where a crash has stored the call's result but not the
// step's, so a resume makes the call again. WithRunWrites lets such a caller hand its
// key-value pairs to the run's writes instead: they are set in the transaction of the
// run's first write (the one before its first outside call, rule L21) and of its last
// (the end, run_finished), when the store is a KVRunAppender; with another store they
// are set just after that write.

// KVWrite is one key-value pair to set (SessionStore.KVSet).
type KVWrite struct {
	Namespace, Key string
	Value          []byte
}

// KVRunAppender is an optional RunAppender extension: AppendRunKV is AppendRun that
// also sets kv, in the same transaction.
type KVRunAppender interface {
	AppendRunKV(ctx context.Context, run RunRecord, kv []KVWrite, entries ...Entry) error
}

// RunNoter is an optional KVRunAppender extension: a store that keeps RunRecord.Note
// with the run's record, in the transaction of the write that carries it, and gives it
// back in Runs. A caller's record of a call's end can then ride in the call's own run
// row, where a key-value row of its own costs a page of another table in every commit.
type RunNoter interface {
	KVRunAppender
	KeepsRunNotes()
}

// RunWrite is a run's write that carries its record: the first (Last false) or the
// end (Last true, Record.Status set).
type RunWrite struct {
	Last   bool
	Record RunRecord
	// Result is a direct call's result (Agent.DirectCall) at its end; nil otherwise.
	Result *ToolResult
	// Claim says the write takes the run's session lease in its transaction (a
	// ClaimAppender's AppendRunClaim, claimwrite.go): a store may let a write ridden on
	// it take another lease with the same rule (store.SQLite's TakeLeaseWrite).
	Claim bool
	// SetNote, not nil at a run's last write on a RunNoter, attaches note to the run's
	// record (RunRecord.Note), stored in the write's transaction. A writer that sets it
	// and then fails the write (its done gets the error) must not count the note stored.
	SetNote func(note string)
}

// RunWriter is called by a run before each write carrying its record, from the run's
// goroutine: kv are set with that write; done, when not nil, is called once the write
// has ended, with its error (nil: kv are stored).
type RunWriter func(w RunWrite) (kv []KVWrite, done func(error))

type runWritesKey struct{}

type runWrites struct {
	session string
	f       RunWriter
}

// WithRunWrites returns a context under which the run of session (only that session's:
// a nested run's writes are its own) calls f before its writes that carry its record.
func WithRunWrites(ctx context.Context, session string, f RunWriter) context.Context {
	return context.WithValue(ctx, runWritesKey{}, runWrites{session: session, f: f})
}

// runWriterOf is the RunWriter ctx carries for session, if any. A run looks it up once,
// on its own context (j.ctx, without cancellation, is a value whose every Value call
// allocates).
func runWriterOf(ctx context.Context, session string) RunWriter {
	if w, ok := ctx.Value(runWritesKey{}).(runWrites); ok && w.session == session {
		return w.f
	}
	return nil
}

// kvStore is the run's store for one write that carries kv (runWriter): its Append
// writes the run record, the entries and kv in one transaction on a KVRunAppender; on
// another store kv are set just after the append, and failing to set them fails not the
// write (its entries are stored) but kv alone (kvErr, for the RunWriter's done).
type kvStore struct {
	*runStore
	kv    []KVWrite
	kvErr error
	claim *heldSession // the run's lease, taken in this write's transaction (claimwrite.go)
}

func (s *kvStore) Append(ctx context.Context, session string, entries ...Entry) error {
	if s.claim != nil {
		if err := s.claim.claimWith(ctx, s.rec, s.kv, entries); err != nil {
			return fmt.Errorf("store session %q: %w", session, err)
		}
		s.done = true
		return nil
	}
	if ka, ok := s.SessionStore.(KVRunAppender); ok {
		if err := ka.AppendRunKV(ctx, s.rec, s.kv, entries...); err != nil {
			return fmt.Errorf("store session %q: %w", session, err)
		}
		s.done = true
		return nil
	}
	if err := s.runStore.Append(ctx, session, entries...); err != nil {
		return err
	}
	for _, w := range s.kv {
		if err := s.SessionStore.KVSet(ctx, w.Namespace, w.Key, w.Value); err != nil {
			s.kvErr = fmt.Errorf("store %s %q with session %q: %w", w.Namespace, w.Key, session, err)
			return nil
		}
	}
	return nil
}

// writeRun is journal.write's write of a batch with the run record: with the kv of the
// run's RunWriter, when its context carries one.
func (j *journal) writeRun(batch []Entry) error {
	f := j.writer
	if f == nil && j.claim == nil {
		return j.outage.retry(j.clock, func() error { return j.clock.Append(j.ctx, &j.run, j.session, batch...) })
	}
	var kv []KVWrite
	var done func(error)
	if f != nil {
		w := RunWrite{Last: j.run.rec.Status != "", Record: j.run.rec, Claim: j.claim != nil}
		if w.Last {
			w.Result = j.result
			if _, ok := j.run.SessionStore.(RunNoter); ok {
				w.SetNote = func(note string) { j.run.rec.Note = note }
			}
		}
		kv, done = f(w)
	}
	ks := &kvStore{runStore: &j.run, kv: kv, claim: j.claim}
	err := j.outage.retry(j.clock, func() error { return j.clock.Append(j.ctx, ks, j.session, batch...) })
	if err == nil {
		j.claim = nil // the lease is the run's now
	}
	if done != nil {
		derr := err
		if derr == nil {
			derr = ks.kvErr
		}
		done(derr)
	}
	return err
}
