package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agenthost/agenthost/providers"
)

// mapError turns an SDK failure into a typed provider error:
//
//	context-length body (code context_length_exceeded, or a message about
//	the context length/window)            → context_overflow
//	429 (Retry-After / retry-after-ms)    → rate_limit, retryable
//	429 insufficient_quota                → rate_limit, not retryable
//	401, 403                              → auth
//	400, 404, 422                         → invalid_request
//	5xx                                   → overloaded, retryable
//	no connection (refused, no such host) → provider, retryable, naming the address
//	connection cut mid-stream             → provider, retryable
//	a chunk that is not valid JSON        → provider
//	error event inside the stream         → provider
func mapError(err error) *providers.Error {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		return httpError(apiErr)
	}
	var streamErr *ssestream.StreamError
	if errors.As(err, &streamErr) {
		msg := strings.TrimPrefix(streamErr.Message, "received error while streaming: ")
		if isContextOverflow("", msg) {
			return &providers.Error{Kind: providers.KindContextOverflow, Message: "openai: " + msg}
		}
		return &providers.Error{Kind: providers.KindProvider, Message: "openai: error in stream: " + msg}
	}
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) {
		return &providers.Error{Kind: providers.KindProvider, Message: "openai: malformed stream chunk: " + err.Error()}
	}
	if u := providers.Unreachable("openai", "OPENAI_BASE_URL", err); u != nil {
		return u // nothing answered: the message names the address and the setting
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || isTransport(err) {
		return &providers.Error{Kind: providers.KindProvider, Message: "openai: stream interrupted: " + err.Error(), Retryable: true}
	}
	return &providers.Error{Kind: providers.KindProvider, Message: "openai: " + err.Error()}
}

func httpError(e *sdk.Error) *providers.Error {
	out := httpErrorKind(e)
	out.Status = e.StatusCode // retry_on may name statuses
	return out
}

func httpErrorKind(e *sdk.Error) *providers.Error {
	msg := e.Message
	if msg == "" {
		msg = strings.TrimSpace(e.RawJSON())
	}
	if msg == "" {
		msg = http.StatusText(e.StatusCode)
	}
	text := fmt.Sprintf("openai: HTTP %d: %s", e.StatusCode, msg)
	switch {
	case isContextOverflow(e.Code, e.Message):
		return &providers.Error{Kind: providers.KindContextOverflow, Message: text}
	case e.StatusCode == http.StatusTooManyRequests && e.Code == "insufficient_quota":
		// Billing, not throttling: waiting does not help.
		return &providers.Error{Kind: providers.KindRateLimit, Message: text}
	case e.StatusCode == http.StatusTooManyRequests:
		return &providers.Error{Kind: providers.KindRateLimit, Message: text, RetryAfter: retryAfter(e.Response), Retryable: true}
	case e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden:
		return &providers.Error{Kind: providers.KindAuth, Message: text}
	case e.StatusCode == http.StatusBadRequest || e.StatusCode == http.StatusNotFound || e.StatusCode == http.StatusUnprocessableEntity:
		return &providers.Error{Kind: providers.KindInvalidRequest, Message: text}
	case e.StatusCode >= 500:
		return &providers.Error{Kind: providers.KindOverloaded, Message: text, RetryAfter: retryAfter(e.Response), Retryable: true}
	}
	return &providers.Error{Kind: providers.KindProvider, Message: text}
}

func isContextOverflow(code, msg string) bool {
	if code == "context_length_exceeded" {
		return true
	}
	m := strings.ToLower(msg)
	return strings.Contains(m, "context length") || strings.Contains(m, "context_length") || strings.Contains(m, "context window")
}

// retryAfter reads retry-after-ms (OpenAI) or Retry-After (seconds or an
// HTTP date); 0 when absent or unparseable.
func retryAfter(resp *http.Response) time.Duration {
	if resp == nil {
		return 0
	}
	if ms, err := strconv.ParseFloat(resp.Header.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := resp.Header.Get("Retry-After")
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// isTransport reports errors of the connection rather than the content.
func isTransport(err error) bool {
	var netErr interface{ Timeout() bool }
	return errors.As(err, &netErr) || strings.Contains(err.Error(), "connection reset")
}
