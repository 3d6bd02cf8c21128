package loop

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Store outages (rule L23). A store marks a failure of the storage itself, rather than
// of what was written, with a method StoreUnavailable() bool on the error (the database
// unreachable, restarting, the disk full). With Config.StoreOutage set, a run whose
// write fails so waits for the store, probing with backoff, and writes the same batch
// again when it answers: the session stays a gapless prefix of what happened, and the
// run goes on where it was instead of failing with a tool call that has no result.
// Once written after a wait, the run reports the outage as an error event (kind
// "store_unavailable"; not retryable, which marks a model call retried) so its client
// and its record say what happened. The wait ends with the run's context (an abort, the
// client gone) or after StoreOutage:
// then the write's error is the run's, as without a wait.

// storeWaitMax bounds the pause between two probes of an unavailable store.
const storeWaitMax = 2 * time.Second

// storeUnavailable reports whether err is marked by its store as the storage's failure.
func storeUnavailable(err error) bool {
	var u interface{ StoreUnavailable() bool }
	return errors.As(err, &u) && u.StoreUnavailable()
}

// outageWait is a journal's policy for unavailable stores.
type outageWait struct {
	max    time.Duration   // Config.StoreOutage; 0 = no wait
	ctx    context.Context // the run's: an abort ends the wait
	waited time.Duration   // of the last write, for the report
	cause  error
}

// retry calls write until it succeeds, fails for another reason, or the wait is over.
func (o *outageWait) retry(clock Driver, write func() error) error {
	o.waited, o.cause = 0, nil
	err := write()
	if err == nil || o.max <= 0 || o.ctx == nil || !storeUnavailable(err) {
		return err
	}
	start := clock.Now()
	pause := 100 * time.Millisecond
	o.cause = err
	for storeUnavailable(err) {
		left := o.max - clock.Now().Sub(start)
		if left <= 0 {
			return fmt.Errorf("the store stayed unavailable for %s: %w", o.max.Round(time.Millisecond), err)
		}
		if serr := clock.Sleep(o.ctx, min(pause, left)); serr != nil {
			return err // the run ended while it waited: the write's own error is its
		}
		pause = min(2*pause, storeWaitMax)
		err = write()
	}
	if err == nil {
		o.waited = clock.Now().Sub(start)
	}
	return err
}

// reportOutage emits, after a write that had to wait, the error event that says so. It
// is stored with the next write.
func (j *journal) reportOutage() {
	if j.outage.waited <= 0 {
		return
	}
	waited, cause := j.outage.waited, j.outage.cause
	j.outage.waited = 0
	j.emit(EventError, &ErrorData{Kind: "store_unavailable", Message: fmt.Sprintf(
		"the session store was unavailable for %s (%v); the run waited and went on", waited.Round(time.Millisecond), cause)})
}
