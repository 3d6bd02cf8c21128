package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/agenthost/agenthost/providers"
)

// mapError turns an SDK failure into a typed provider error. The API's error type
// decides first, since an error event inside a stream arrives with HTTP status 200:
//
//	rate_limit_error, 429 (retry-after)          → rate_limit, retryable
//	overloaded_error, 529, api_error, 5xx       → overloaded, retryable
//	authentication_error, permission_error,
//	401, 403                                     → auth
//	billing_error                                → rate_limit, not retryable
//	"prompt is too long" / context window         → context_overflow
//	invalid_request_error, not_found_error, 4xx  → invalid_request
//	connection cut mid-stream                    → provider, retryable
func mapError(err error) *providers.Error {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		return apiError(apiErr)
	}
	if strings.HasPrefix(err.Error(), "received error while streaming: ") {
		return &providers.Error{Kind: providers.KindProvider, Message: "anthropic: error in stream: " +
			strings.TrimPrefix(err.Error(), "received error while streaming: ")}
	}
	var syntaxErr *json.SyntaxError
	if errors.As(err, &syntaxErr) {
		return &providers.Error{Kind: providers.KindProvider, Message: "anthropic: malformed stream event: " + err.Error()}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || isTransport(err) {
		return &providers.Error{Kind: providers.KindProvider, Message: "anthropic: stream interrupted: " + err.Error(), Retryable: true}
	}
	return &providers.Error{Kind: providers.KindProvider, Message: "anthropic: " + err.Error()}
}

func apiError(e *sdk.Error) *providers.Error {
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(e.RawJSON()), &body)
	typ, msg := body.Error.Type, body.Error.Message
	if msg == "" {
		msg = strings.TrimSpace(e.RawJSON())
	}
	if msg == "" {
		msg = http.StatusText(e.StatusCode)
	}
	where := fmt.Sprintf("HTTP %d", e.StatusCode)
	if e.StatusCode == http.StatusOK {
		where = "in stream"
	}
	text := fmt.Sprintf("anthropic: %s: %s: %s", where, cmpOr(typ, "error"), msg)
	lower := strings.ToLower(msg)
	switch {
	case typ == "rate_limit_error" || e.StatusCode == http.StatusTooManyRequests:
		return &providers.Error{Kind: providers.KindRateLimit, Message: text, RetryAfter: retryAfter(e.Response), Retryable: true}
	case typ == "billing_error":
		return &providers.Error{Kind: providers.KindRateLimit, Message: text}
	case typ == "overloaded_error" || typ == "api_error" || typ == "timeout_error" || e.StatusCode >= 500:
		return &providers.Error{Kind: providers.KindOverloaded, Message: text, RetryAfter: retryAfter(e.Response), Retryable: true}
	case typ == "authentication_error" || typ == "permission_error" ||
		e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden:
		return &providers.Error{Kind: providers.KindAuth, Message: text}
	case strings.Contains(lower, "prompt is too long") || strings.Contains(lower, "context window") ||
		strings.Contains(lower, "context length"):
		return &providers.Error{Kind: providers.KindContextOverflow, Message: text}
	case typ == "invalid_request_error" || typ == "not_found_error" || (e.StatusCode >= 400 && e.StatusCode < 500):
		return &providers.Error{Kind: providers.KindInvalidRequest, Message: text}
	}
	return &providers.Error{Kind: providers.KindProvider, Message: text}
}

// retryAfter reads retry-after (seconds or an HTTP date); 0 when absent.
func retryAfter(resp *http.Response) time.Duration {
	if resp == nil || resp.StatusCode == http.StatusOK {
		return 0
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

func isTransport(err error) bool {
	var netErr interface{ Timeout() bool }
	return errors.As(err, &netErr) || strings.Contains(err.Error(), "connection reset")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
