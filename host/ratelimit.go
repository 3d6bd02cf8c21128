package host

import (
	"context"
	"time"

	"golang.org/x/time/rate"
)

// limiter holds a provider's client-side rate limits, shared by every run of the
// process: requests_per_minute spreads calls evenly (one at a time, 60/rpm seconds
// apart), tokens_per_minute is a bucket of a minute's tokens that refills continuously.
// A call waits for both before it is made. Its tokens are estimated beforehand from the
// request's size; once the provider reports the real count, the difference is drawn
// from the bucket too, so the next calls wait for what this one really used.
type limiter struct {
	requests *rate.Limiter
	tokens   *rate.Limiter
	burst    int
}

func newLimiter(rpm, tpm int) *limiter {
	if rpm <= 0 && tpm <= 0 {
		return nil
	}
	l := &limiter{}
	if rpm > 0 {
		l.requests = rate.NewLimiter(rate.Limit(float64(rpm)/60), 1)
	}
	if tpm > 0 {
		l.tokens = rate.NewLimiter(rate.Limit(float64(tpm)/60), tpm)
		l.burst = tpm
	}
	return l
}

// wait blocks until a call of about estimate tokens may be made, or ctx ends.
func (l *limiter) wait(ctx context.Context, estimate int) error {
	if l == nil {
		return nil
	}
	if l.requests != nil {
		if err := l.requests.Wait(ctx); err != nil {
			return err
		}
	}
	if l.tokens != nil {
		return l.tokens.WaitN(ctx, min(max(estimate, 1), l.burst))
	}
	return nil
}

// account draws what a call used beyond its estimate.
func (l *limiter) account(used, estimate int) {
	if l == nil || l.tokens == nil || used <= estimate {
		return
	}
	l.tokens.ReserveN(time.Now(), min(used-estimate, l.burst))
}

// delayAt is how long a call of n tokens made at t would wait, without taking anything:
// for tests and benchmarks that check the limits deterministically.
func (l *limiter) delayAt(t time.Time, n int) time.Duration {
	var d time.Duration
	if l.requests != nil {
		r := l.requests.ReserveN(t, 1)
		d = r.DelayFrom(t)
		r.CancelAt(t)
	}
	if l.tokens != nil {
		r := l.tokens.ReserveN(t, min(n, l.burst))
		d = max(d, r.DelayFrom(t))
		r.CancelAt(t)
	}
	return d
}
