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
//	no connection (refused, no such host)        → provider, retryable, naming the address
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
	if u := providers.Unreachable("anthropic", "ANTHROPIC_BASE_URL", err); u != nil {
		return u // nothing answered: the message names the address and the setting
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
	kind, retryable := errorKind(typ, e.StatusCode, strings.ToLower(msg))
	out := &providers.Error{Kind: kind, Message: fmt.Sprintf("anthropic: %s: %s: %s", where, cmpOr(typ, "error"), msg), Retryable: retryable}
	if e.StatusCode != http.StatusOK {
		out.Status = e.StatusCode // retry_on may name statuses
	}
	if retryable { // rate_limit and overloaded: the API may say when to come back
		out.RetryAfter = retryAfter(e.Response)
	}
	return out
}

// errorKind classifies an API error by its type, HTTP status and (lower-cased)
// message, in this order: the first rule that matches decides (mapError's table).
func errorKind(typ string, status int, lowerMsg string) (kind string, retryable bool) {
	switch {
	case typ == "rate_limit_error" || status == http.StatusTooManyRequests:
		return providers.KindRateLimit, true
	case typ == "billing_error":
		return providers.KindRateLimit, false
	case typ == "overloaded_error" || typ == "api_error" || typ == "timeout_error" || status >= 500:
		return providers.KindOverloaded, true
	case typ == "authentication_error" || typ == "permission_error" || status == http.StatusUnauthorized || status == http.StatusForbidden:
		return providers.KindAuth, false
	case isContextOverflow(lowerMsg):
		return providers.KindContextOverflow, false
	case typ == "invalid_request_error" || typ == "not_found_error" || (status >= 400 && status < 500):
		return providers.KindInvalidRequest, false
	}
	return providers.KindProvider, false
}

func isContextOverflow(lowerMsg string) bool {
	return strings.Contains(lowerMsg, "prompt is too long") || strings.Contains(lowerMsg, "context window") ||
		strings.Contains(lowerMsg, "context length")
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
