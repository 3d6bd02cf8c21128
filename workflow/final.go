package workflow

import (
	"time"

	"github.com/agenthost/agenthost/loop"
)

// A run's last write rides on its last step's call. A run whose last step is a tool step
// that succeeds ends completed, with nothing called after that step's call: so on a store
// that can give a lease back in another session's write (leaseDropper: SQLite), that
// call's end (its result, written before the call returns) carries the step's end, the
// run's final head (completed, its outputs, its end) and the release of the run's lease,
// in one transaction, instead of the step's end in the call's and the final head with
// the release in a commit of the run's own. A process killed before it has stored neither
// the call's result nor the step's end (the call is made again on resume, like any call
// whose end was not stored); one killed after it has stored the completed run.
//
// The call's end knows it ends the run when the step is the only one running (it runs
// on the scheduler's goroutine: sched.alone), every other step ended ok, skipped or
// rejected, none failed, no write of the run failed and its context is alive; then the
// scheduler, finding nothing to start, ends the run with the record stored (sched.final).

// finalKV is the writes of the end of cs's call when it ends the run (ok true): the
// step's end and the final head, then the lease's release; and their done, which lets
// go of s.mu. ok false: this end is not the run's last, or the store cannot ride the
// release; s.mu is held then, as it was.
func (s *sched) finalKV(cs *cstep, end *StepRecord) (kv []loop.KVWrite, done func(error), ok bool) {
	if !s.alone || !s.endsRun(cs.ID) {
		return nil, nil, false
	}
	drop, ok := s.lease.dropWrite()
	if !ok {
		return nil, nil, false
	}
	prev := *s.rec
	change := func() {
		s.stored(cs.ID, end)
		s.rec.Status, s.rec.Error, s.rec.Ended = RunCompleted, "", time.Now().UTC()
		s.rec.Outputs = s.outputsOf(s.snapshot().Steps)
	}
	undo := func() {
		delete(s.over, cs.ID)
		s.rec.Status, s.rec.Error, s.rec.Ended, s.rec.Outputs = prev.Status, prev.Error, prev.Ended, prev.Outputs
	}
	change()
	kv, stored, err := s.writes(s.snapshot())
	if err != nil {
		undo()
		s.mu.Unlock()
		return nil, nil, true
	}
	return append(kv, drop), func(err error) {
		if err != nil {
			undo()
		} else {
			stored()
			s.final = true
			s.lease.markDropped()
		}
		s.mu.Unlock()
	}, true
}

// endsRun says the end of step id's call, ok, ends the run: every other step ended ok,
// skipped or rejected, none failed, no write failed and the run's context is alive.
// s.mu is held, on the scheduler's goroutine (s.alone).
func (s *sched) endsRun(id string) bool {
	if len(s.failed) > 0 || s.stopErr != nil || s.ctx.Err() != nil {
		return false
	}
	for _, cs := range s.w.steps {
		if cs.ID != id && !terminal(s.rec.Steps[cs.ID]) {
			return false
		}
	}
	return true
}
