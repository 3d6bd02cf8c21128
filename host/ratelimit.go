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

// userRates is [admission] per_user_per_minute: a bucket of a minute's runs for each
// user, refilled continuously (the token bucket the provider limits use). A user whose
// bucket is full again is forgotten, so the map holds only users seen within a minute.
type userRates struct {
	perMinute int
	buckets   map[string]*rate.Limiter
}

func newUserRates(perMinute int) *userRates {
	if perMinute <= 0 {
		return nil
	}
	return &userRates{perMinute: perMinute, buckets: map[string]*rate.Limiter{}}
}

// take takes one run from user's bucket at now, or says how long until one is there
// (and takes nothing). The caller serialises calls (admission.mu).
func (u *userRates) take(user string, now time.Time) time.Duration {
	if u == nil {
		return 0
	}
	if len(u.buckets) > 1024 {
		for name, b := range u.buckets {
			if b.TokensAt(now) >= float64(u.perMinute) {
				delete(u.buckets, name)
			}
		}
	}
	b := u.buckets[user]
	if b == nil {
		b = rate.NewLimiter(rate.Limit(float64(u.perMinute)/60), u.perMinute)
		u.buckets[user] = b
	}
	r := b.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d
	}
	return 0
}
