package workflow

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// A tool step's record (its row, rows.go) rides on its call's writes (loop.WithRunWrites). The call is a
// run of its own (the Executor's DirectCall) that writes twice: before the tool runs
// and at its end. The step's end (ok, its output) is stored with the second, when the
// call succeeded: in the same transaction as the call's own entries on a store that can
// (loop.KVRunAppender), so no crash can leave a call's result stored without the step's
// end (a resume would make the call again). On a store that keeps a run's note
// (loop.RunNoter) the end is the call's run's note, not a row (notes.go): its row rides
// with the run's next write of its own. A call that failed, or an Executor whose calls
// are no runs, leaves the step's end to finish, as before.
//
// The step's start is not stored: its call's first write stores the call's run, open,
// in the step's session (StepSession), and that open run is the step's running state
// (LoadOwnedRecord shows such a step running, notes.go). A resume runs a step with no
// row again, as it ran one stored running, so nothing is lost; what a row at the start
// cost was a page of the key-value table in every call's first commit (BENCHMARKS.md,
// "Workflow step, round five"). A fan-out's start (its items) and a step that waits for
// its session (busy.go) are still stored, as is any step whose record changed when
// another write of the run is made (a write stores every row that changed).
//
// The scheduler's goroutine reads s.rec.Steps without the lock (it alone changes a
// step's status), so a step's goroutine does not change the step's record: the end it
// stored waits in s.over until finish adopts it. Every write of the record (save)
// includes s.over, so no later write takes a stored end back.

// save stores the run's record, with the ends stored by calls (s.over): what changed
// since its last write (rows.go), one row at a time. s.mu is held.
func (s *sched) save(ctx context.Context) error {
	if err := s.flushStart(); err != nil {
		return err
	}
	r := s.snapshot()
	kv, done, err := s.writes(r)
	if err != nil {
		return fmt.Errorf("workflow %s run %s: encode record: %w", r.Workflow, r.RunID, err)
	}
	if err := setAll(ctx, s.e.Store, kv); err != nil {
		return fmt.Errorf("workflow %s run %s: store record: %w", r.Workflow, r.RunID, err)
	}
	done()
	return nil
}

// kvSetter is a store that sets several key-value pairs in one transaction
// (store.SQLite's KVSetAll).
type kvSetter interface {
	KVSetAll(ctx context.Context, kv []loop.KVWrite) error
}

// setAll stores kv in order: in one transaction on a kvSetter, else one by one. The
// writes land even when the run's context ended: they record how far it got.
func setAll(ctx context.Context, st loop.SessionStore, kv []loop.KVWrite) error {
	if ks, ok := st.(kvSetter); ok && len(kv) > 1 {
		return ks.KVSetAll(context.WithoutCancel(ctx), kv)
	}
	for _, w := range kv {
		if err := st.KVSet(context.WithoutCancel(ctx), w.Namespace, w.Key, w.Value); err != nil {
			return err
		}
	}
	return nil
}

// writes are the writes that store r (a snapshot) and their done (rows.go). s.mu is held.
func (s *sched) writes(r *Record) ([]loop.KVWrite, func(), error) {
	kv, done, err := s.enc.writes(r)
	if encodeCheck != nil && err == nil {
		encodeCheck(r, kv)
	}
	return kv, done, err
}

// encodeCheck, when set (by the package's tests), sees every record the engine stores
// with the writes that store it.
var encodeCheck func(r *Record, kv []loop.KVWrite)

// snapshot is the record as it is stored: s.rec with s.over. s.mu is held.
func (s *sched) snapshot() *Record {
	if len(s.over) == 0 {
		return s.rec
	}
	r := *s.rec
	r.Steps = maps.Clone(s.rec.Steps)
	maps.Copy(r.Steps, s.over)
	return &r
}

// stepWriter is the loop.RunWriter of one call of a tool step (of its item-th item; -1
// for the step). It holds s.mu from before the write until the write has ended, so
// the records are stored in the order they are made.
func (s *sched) stepWriter(cs *cstep, item int) loop.RunWriter {
	return func(w loop.RunWrite) ([]loop.KVWrite, func(error)) {
		if !w.Last {
			if item >= 0 {
				return nil, nil // a fan-out's start was stored by start, with its items
			}
			s.mu.Lock()
			return s.startWrite(w) // the call's open run is the step's start; the run's may ride (ridestart.go)
		}
		if w.Result == nil || w.Record.Status != loop.StatusCompleted || w.Result.IsError {
			return nil, nil // a failed attempt: finish stores the step's end, if it is one
		}
		out := resultValue(w.Result.Structured, w.Result.Text())
		s.mu.Lock()
		if item >= 0 {
			r := s.rec.Steps[cs.ID]
			old := r.Items[item]
			return s.recordKV(func() { r.Items[item] = &ItemRecord{Status: StatusOK, Output: out} }, func() { r.Items[item] = old })
		}
		end := *s.rec.Steps[cs.ID]
		end.Status, end.Output, end.Ended, end.Error = StatusOK, out, time.Now().UTC(), ""
		if kv, done, ok := s.finalKV(cs, &end); ok { // the run's last write (final.go)
			return kv, done
		}
		if w.SetNote != nil { // the end rides in the call's run row (notes.go)
			if b, err := appendStepValue(make([]byte, 0, 256), &end); err == nil {
				w.SetNote(string(b))
				return nil, func(err error) {
					if err == nil {
						s.stored(cs.ID, &end)
					}
					s.mu.Unlock()
				}
			}
		}
		return s.recordKV(func() { s.stored(cs.ID, &end) }, func() { delete(s.over, cs.ID) })
	}
}

// recordKV applies change, and returns the record as a write for the call's transaction
// and its done, which takes change back if the write failed and lets go of s.mu (held
// by the caller).
func (s *sched) recordKV(change, undo func()) ([]loop.KVWrite, func(error)) {
	change()
	kv, stored, err := s.writes(s.snapshot())
	if err != nil {
		undo()
		s.mu.Unlock()
		return nil, nil
	}
	return kv, func(err error) {
		if err != nil {
			undo()
		} else {
			stored()
		}
		s.mu.Unlock()
	}
}

// stored records end as step id's end stored by its call, until finish adopts it.
// s.mu is held.
func (s *sched) stored(id string, end *StepRecord) {
	if s.over == nil {
		s.over = map[string]*StepRecord{}
	}
	s.over[id] = end
}

// adopt makes the end a call stored for step id the step's record; it reports whether
// there was one. s.mu is held.
func (s *sched) adopt(id string) bool {
	end, ok := s.over[id]
	if ok {
		s.rec.Steps[id] = end
		delete(s.over, id)
	}
	return ok
}
