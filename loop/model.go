package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Model is a chat model that streams its answer. Adapters (a provider subprocess, an
// in-process fake) implement it; the loop never knows which.
type Model interface {
	Stream(ctx context.Context, req Request) (Stream, error)
}

// Stream yields a response's deltas. Recv returns io.EOF after the last one. Errors may be
// *ModelError to say whether and when to retry; any other error counts as a transport
// error (retryable).
type Stream interface {
	Recv() (Delta, error)
	Close() error
}

// Request is one model call. Its Messages may be the run's own transcript array,
// shared with later calls: a Model reads them and never writes into them.
type Request struct {
	Model          string          `json:"model,omitempty"`
	Messages       []Message       `json:"messages"`
	Tools          []ToolSpec      `json:"tools,omitempty"`
	ToolChoice     string          `json:"tool_choice,omitempty"` // "", "auto", "none", "required"
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	MaxTokens      int             `json:"max_tokens,omitempty"`
	Metadata       RequestMetadata `json:"metadata"`
	// PromptCacheKey, when set (Config.PromptCache), asks the provider to cache the
	// request's stable prefix: the requests that share the key share their prefix.
	PromptCacheKey string `json:"prompt_cache_key,omitempty"`
}

// RequestMetadata identifies a call, so an adapter can log or de-duplicate it.
type RequestMetadata struct {
	SessionID string            `json:"session"`
	RunID     string            `json:"run"`
	CallIndex int               `json:"call_index"`
	Extra     map[string]string `json:"extra,omitempty"`
}

// DeltaKind says what a Delta carries.
type DeltaKind string

const (
	DeltaText      DeltaKind = "text"
	DeltaReasoning DeltaKind = "reasoning"
	DeltaToolCall  DeltaKind = "tool_call"
	DeltaUsage     DeltaKind = "usage"
	DeltaFinish    DeltaKind = "finish"
	// DeltaReasoningState carries, in Text, what the adapter needs back with this answer
	// (Message.ReasoningState); the last one of a call wins.
	DeltaReasoningState DeltaKind = "reasoning_state"
)

// Delta is one piece of a streamed response. Seq numbers a call's deltas from 1; the loop
// drops a delta whose Seq it has already seen for the same call (rule L14), so an adapter
// that replays a stream after a reconnect does not duplicate text. Seq 0 means unnumbered.
type Delta struct {
	Seq        int
	Kind       DeltaKind
	Text       string         // text and reasoning
	ToolCall   *ToolCallDelta // tool_call
	Usage      *Usage         // usage
	StopReason string         // finish: end_turn, tool_use, max_tokens, ...
}

// StopReason is why a model stopped, normalised (L15): adapters send the provider's own
// words in DeltaFinish and the loop maps anything it does not know to StopOther.
type StopReason string

const (
	StopEndTurn       StopReason = "end_turn"
	StopToolUse       StopReason = "tool_use"
	StopMaxTokens     StopReason = "max_tokens"
	StopContentFilter StopReason = "content_filter"
	StopOther         StopReason = "other"
)

// normaliseStop maps a finish reason to a StopReason. A stream without one is taken as
// tool_use when it carried calls and end_turn otherwise.
func normaliseStop(s string, calls bool) StopReason {
	switch StopReason(s) {
	case StopEndTurn, StopToolUse, StopMaxTokens, StopContentFilter, StopOther:
		return StopReason(s)
	case "":
		if calls {
			return StopToolUse
		}
		return StopEndTurn
	}
	return StopOther
}

// ToolCallDelta is a fragment of a tool call. Fragments with the same Index belong to one
// call; ID and Name arrive once, Arguments are concatenated.
type ToolCallDelta struct {
	Index     int
	ID        string
	Name      string
	Arguments string
}

// ErrorKind classifies a model failure.
type ErrorKind string

// Error kinds are Kind… constants: values of ModelError.Kind, not errors themselves
// (compare with ==, not errors.Is). Sentinel errors are the Err… variables.
const (
	KindRateLimit       ErrorKind = "rate_limit"
	KindOverloaded      ErrorKind = "overloaded"
	KindContextOverflow ErrorKind = "context_overflow"
	KindAuth            ErrorKind = "auth"
	KindInvalidRequest  ErrorKind = "invalid_request"
	KindProvider        ErrorKind = "provider"
	KindTransport       ErrorKind = "transport"
)

// ModelError is a typed model failure. Retryable errors are retried by the loop's
// RetryPolicy; RetryAfter, when set, is the delay the provider asked for.
type ModelError struct {
	Kind       ErrorKind
	Message    string
	Retryable  bool
	RetryAfter time.Duration
	// Status is the HTTP status the provider's API answered with, 0 when none: a
	// RetryPolicy may retry by status (RetryStatuses).
	Status int
}

func (e *ModelError) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("%s: %s (retry after %s)", e.Kind, e.Message, e.RetryAfter)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}

// asModelError classifies any error from a model. Context errors are returned as nil so
// the caller sees them as cancellation, never as something to retry.
func asModelError(err error) *ModelError {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	var me *ModelError
	if errors.As(err, &me) {
		return me
	}
	return &ModelError{Kind: KindTransport, Message: err.Error(), Retryable: true}
}
