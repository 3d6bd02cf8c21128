package providers

import (
	"errors"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/providers/proto"
)

// Error kinds, the vocabulary the loop's retry policy understands.
const (
	KindRateLimit       = "rate_limit"
	KindOverloaded      = "overloaded"
	KindContextOverflow = "context_overflow"
	KindAuth            = "auth"
	KindInvalidRequest  = "invalid_request"
	KindProvider        = "provider"
)

// Error is a typed provider failure. It travels in-band as the last event of a
// stream, so it survives the process boundary intact; transport failures
// (the adapter dying) are turned into one on the host side.
type Error struct {
	Kind       string
	Message    string
	RetryAfter time.Duration // 0 when the provider gave no hint
	Retryable  bool
	// Status is the HTTP status the provider's API answered with, 0 when there was none
	// (a connection cut, an error event in a stream that began 200): the loop's retry
	// policy may retry by status ([agent.retry] retry_on).
	Status int
	// Process is set when the adapter process failed under the call (it died or
	// its connection dropped): a number for that process, the same in every call
	// the one failure ended. A crash with thirty calls streaming is one event,
	// not thirty, and a circuit breaker counting failures must see it so.
	// Never sent over the wire: it is the host's name for its own process.
	Process uint64
}

func (e *Error) Error() string {
	s := e.Kind + ": " + e.Message
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	return s
}

// KnownKind reports whether kind is one of the Kind constants.
func KnownKind(kind string) bool {
	switch kind {
	case KindRateLimit, KindOverloaded, KindContextOverflow, KindAuth, KindInvalidRequest, KindProvider:
		return true
	}
	return false
}

// DefaultRetryable is the retryable flag a kind carries when the adapter has
// no better knowledge: throttling and overload pass, the rest need a change
// of request or configuration first.
func DefaultRetryable(kind string) bool {
	return kind == KindRateLimit || kind == KindOverloaded
}

// AsError returns err as an *Error, wrapping anything untyped as a
// non-retryable KindProvider error.
func AsError(err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	return &Error{Kind: KindProvider, Message: err.Error()}
}

func (e *Error) proto() *providerpb.Error {
	return &providerpb.Error{
		Kind:         e.Kind,
		Message:      e.Message,
		RetryAfterMs: e.RetryAfter.Milliseconds(),
		Retryable:    e.Retryable,
		Status:       int32(e.Status),
	}
}

func errorFromProto(p *providerpb.Error) *Error {
	kind := p.GetKind()
	if !KnownKind(kind) {
		kind = KindProvider
	}
	return &Error{
		Kind:       kind,
		Message:    p.GetMessage(),
		RetryAfter: time.Duration(p.GetRetryAfterMs()) * time.Millisecond,
		Retryable:  p.GetRetryable(),
		Status:     int(p.GetStatus()),
	}
}

// MissingKey is what an adapter's Configure returns when it would call a hosted API
// with no key: every call would fail with 401 (or, offline, a DNS error the host retries),
// so the run stops before any of them and names the variable to set. The hint points at
// the scripted provider `agenthost init` writes, the way to try the host with no key.
func MissingKey(envVar string) error {
	return fmt.Errorf("%s is not set: export it or use --provider scripted "+
		"(a server that needs no key: set the base_url option)", envVar)
}
