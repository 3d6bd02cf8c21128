package host

import (
	"errors"
	"slices"
	"testing"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
	"github.com/agenthost/agenthost/providers"
)

// [agent.retry] retry_on becomes the loop's retry kinds and statuses, and a provider
// error's HTTP status reaches the loop's ModelError; without retry_on the loop's
// default classification stays (nil lists).
func TestRetryOnMapsOntoTheLoopsRetryPolicyAndStatusesReachTheLoop(t *testing.T) {
	p := retryPolicy(manifest.RetryConfig{MaxAttempts: 3, RetryOn: manifest.RetryOn{Kinds: []string{"rate_limit", "server_error"}, Statuses: []int{529}}})
	if p.MaxAttempts != 3 || !slices.Equal(p.Retryable, []loop.ErrorKind{loop.KindRateLimit, loop.KindServerError}) || !slices.Equal(p.RetryStatuses, []int{529}) {
		t.Fatalf("policy %+v", p)
	}
	if p := retryPolicy(manifest.RetryConfig{RetryOn: manifest.RetryOn{Kinds: []string{"rate_limit"}, Statuses: []int{}}}); p.RetryStatuses == nil || p.Retryable == nil {
		t.Fatalf("a set retry_on must give non-nil lists: %+v", p)
	}
	if p := retryPolicy(manifest.RetryConfig{}); p.Retryable != nil || p.RetryStatuses != nil {
		t.Fatalf("no retry_on: %+v", p)
	}
	var me *loop.ModelError
	err := toModelError(&providers.Error{Kind: providers.KindOverloaded, Message: "busy", Retryable: true, Status: 529})
	if !errors.As(err, &me) || me.Status != 529 || me.Kind != loop.KindOverloaded {
		t.Fatalf("model error %+v", err)
	}
}
