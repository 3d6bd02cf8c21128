package manifest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// RetryOn is [agent.retry] retry_on: which failed model calls are retried, as error
// kinds and HTTP statuses, e.g. ["rate_limit", "server_error", 529, 503]. Unset (nil
// Kinds and Statuses), the loop's default applies: rate_limit, overloaded, transport, and
// what the adapter marked retryable. Set, a failure is retried when its kind or its
// status is listed, and only then.
type RetryOn struct {
	Kinds    []string
	Statuses []int
}

// RetryKinds are the kinds retry_on accepts: the loop's retryable error kinds and
// server_error (any 5xx status, and overloaded). context_overflow has its own path
// (compaction); auth and invalid_request would fail the same way again.
var RetryKinds = []string{"rate_limit", "overloaded", "server_error", "transport", "provider"}

// Set reports whether retry_on was given.
func (r RetryOn) Set() bool { return r.Kinds != nil || r.Statuses != nil }

// UnmarshalTOML implements toml.Unmarshaler: a list of kind names and status numbers.
// Their values are checked by checkRetry, which names the key.
func (r *RetryOn) UnmarshalTOML(v any) error {
	list, ok := v.([]any)
	if !ok {
		return fmt.Errorf("want a list of error kinds and HTTP statuses, got %T", v)
	}
	out := RetryOn{Kinds: []string{}, Statuses: []int{}}
	for _, e := range list {
		switch x := e.(type) {
		case string:
			out.Kinds = append(out.Kinds, x)
		case int64:
			if x < 0 || x > 999 {
				return fmt.Errorf("%d is not an HTTP status", x)
			}
			out.Statuses = append(out.Statuses, int(x))
		default:
			return fmt.Errorf("want an error kind or an HTTP status, got %v", e)
		}
	}
	*r = out
	return nil
}

// checkRetry refuses an unknown kind or a status that is not an error's (400–599) in
// every agent's retry_on, at its key.
func (m *Manifest) checkRetry() error {
	check := func(key string, r RetryOn) error {
		for _, k := range r.Kinds {
			if !slices.Contains(RetryKinds, k) {
				return m.ErrorAt(key, "unknown error kind %q (kinds: %s; or an HTTP status such as 503)", k, strings.Join(RetryKinds, ", "))
			}
		}
		for _, s := range r.Statuses {
			if s < 400 || s > 599 {
				return m.ErrorAt(key, "%d is not an error status (want 400–599)", s)
			}
		}
		return nil
	}
	if err := check("agent.retry.retry_on", m.Agent.Retry.RetryOn); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(m.Agents)) {
		if err := check("agents."+name+".retry.retry_on", m.Agents[name].Retry.RetryOn); err != nil {
			return err
		}
	}
	return nil
}
