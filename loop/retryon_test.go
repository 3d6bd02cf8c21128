package loop

import (
	"errors"
	"testing"
)

// A policy with kinds and statuses (retry_on) retries an error whose kind or status it
// lists, server_error standing for any 5xx status and for overloaded, and nothing else:
// not even a transport error, which the default policy would retry.
func TestRetryOnRetriesTheListedKindsAndStatusesOnly(t *testing.T) {
	retried := []*ModelError{
		{Kind: KindRateLimit},
		{Kind: KindProvider, Status: 529},       // by status
		{Kind: KindInvalidRequest, Status: 502}, // server_error: a 5xx
		{Kind: KindOverloaded},                  // server_error: overloaded
		{Kind: KindProvider, Status: 503},       // by status
	}
	var turns []turn
	for _, e := range retried {
		turns = append(turns, turn{err: e})
	}
	turns = append(turns, turn{text: "ok"})
	m := script(turns...)
	pol := RetryPolicy{MaxAttempts: 10, Retryable: []ErrorKind{KindRateLimit, KindServerError}, RetryStatuses: []int{529, 503}}
	a := newAgent(t, Config{Model: m, Retry: pol})
	if res, _ := runCollect(t, a, userIn("s1", "go")); res.Status != StatusCompleted {
		t.Fatalf("status %s: %v", res.Status, res.Err)
	}
	if n := len(m.requests()); n != len(retried)+1 {
		t.Fatalf("%d model calls, want %d", n, len(retried)+1)
	}
	for _, e := range []*ModelError{{Kind: KindTransport}, {Kind: KindProvider, Status: 404}, {Kind: KindAuth, Status: 401}, {Kind: KindProvider, Retryable: true}} {
		m := script(turn{err: e}, turn{text: "ok"})
		a := newAgent(t, Config{Model: m, Retry: pol})
		res, _ := runCollect(t, a, userIn("s2", "go"))
		var me *ModelError
		if res.Status != StatusFailed || !errors.As(res.Err, &me) || me.Kind != e.Kind || len(m.requests()) != 1 {
			t.Fatalf("%+v: status %s, err %v, %d calls", e, res.Status, res.Err, len(m.requests()))
		}
	}
}
