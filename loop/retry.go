package loop

import (
	"slices"
	"time"
)

// RetryPolicy says which model errors are retried and how long to wait (rule L3).
type RetryPolicy struct {
	MaxAttempts int           // calls in all, first included; default 4
	BaseDelay   time.Duration // first backoff; default 500ms
	MaxDelay    time.Duration // backoff cap; default 30s (a provider's Retry-After is honoured beyond it)
	// Retryable lists the kinds to retry. Nil means rate_limit, overloaded, transport, and
	// any error whose adapter marked it retryable. KindServerError stands for any error
	// with a 5xx status, and for overloaded.
	Retryable []ErrorKind
	// RetryStatuses lists HTTP statuses to retry (ModelError.Status), beside the kinds.
	// With either list set, an error is retried when it matches one of them, and only
	// then ([agent.retry] retry_on).
	RetryStatuses []int
}

// KindServerError is not a kind a model error has: in RetryPolicy.Retryable it names
// the provider's server failing, any error with a 5xx status, and the overloaded kind
// (which the adapters give a 5xx).
const KindServerError ErrorKind = "server_error"

func (p RetryPolicy) withDefaults() RetryPolicy {
	p.MaxAttempts = defaultInt(p.MaxAttempts, 4)
	if p.BaseDelay <= 0 {
		p.BaseDelay = 500 * time.Millisecond
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 30 * time.Second
	}
	return p
}

func (p RetryPolicy) retryable(e *ModelError) bool {
	if p.Retryable != nil || p.RetryStatuses != nil {
		server := e.Kind == KindOverloaded || (e.Status >= 500 && e.Status < 600)
		return slices.Contains(p.Retryable, e.Kind) || (server && slices.Contains(p.Retryable, KindServerError)) ||
			(e.Status != 0 && slices.Contains(p.RetryStatuses, e.Status))
	}
	switch e.Kind {
	case KindRateLimit, KindOverloaded, KindTransport:
		return true
	case KindContextOverflow, KindAuth, KindInvalidRequest:
		return false
	}
	return e.Retryable
}

// delay is the wait before attempt+1: the provider's Retry-After when it gave one,
// otherwise exponential backoff from BaseDelay, capped at MaxDelay, with the driver's
// jitter.
func (p RetryPolicy) delay(attempt int, retryAfter time.Duration, jitter func(time.Duration) time.Duration) time.Duration {
	if retryAfter > 0 {
		return retryAfter
	}
	d := p.BaseDelay
	for i := 1; i < attempt && d < p.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, p.MaxDelay)
	return jitter(d)
}
