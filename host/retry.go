package host

import (
	"slices"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
)

// retryPolicy is the loop's retry policy from [agent.retry]: retry_on's kinds become
// the policy's kinds (server_error is loop.KindServerError) and its statuses the
// statuses, which the providers' errors carry (providers.Error.Status); without
// retry_on the loop's default classification stays.
func retryPolicy(c manifest.RetryConfig) loop.RetryPolicy {
	p := loop.RetryPolicy{MaxAttempts: c.MaxAttempts, BaseDelay: time.Duration(c.BaseDelay), MaxDelay: time.Duration(c.MaxDelay)}
	if c.RetryOn.Set() {
		p.Retryable = make([]loop.ErrorKind, 0, len(c.RetryOn.Kinds))
		for _, k := range c.RetryOn.Kinds {
			p.Retryable = append(p.Retryable, loop.ErrorKind(k))
		}
		p.RetryStatuses = slices.Clone(c.RetryOn.Statuses)
		if p.RetryStatuses == nil {
			p.RetryStatuses = []int{}
		}
	}
	return p
}
