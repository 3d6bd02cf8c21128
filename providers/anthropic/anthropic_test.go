package anthropic_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/providers"
	"github.com/agenthost/agenthost/providers/providertest"
)

var adapterBin string

func TestMain(m *testing.M) {
	adapterBin = testbin.Must(testbin.Anthropic)
	code := m.Run()
	providers.CleanupClients()
	testbin.Cleanup()
	os.Exit(code)
}

// newReplay is a loopback Messages API replaying testdata's recordings.
func newReplay(t *testing.T) *providertest.Replay { return providertest.NewReplay(t, "testdata") }

func startAdapter(t *testing.T, r *providertest.Replay, extra map[string]string) *providers.Client {
	t.Helper()
	opts := map[string]string{"base_url": r.URL, "api_key": "sk-ant-test", "model": "claude-sonnet-4-5"}
	for k, v := range extra {
		opts[k] = v
	}
	return providertest.Start(t, providers.ClientConfig{Name: "anthropic", Command: adapterBin, Options: opts})
}

var (
	run       = providertest.Run
	canonical = providertest.Canonical
)

const thinkingState = `[{"type":"thinking","thinking":"Two products, then a sum.","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},` +
	`{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"}]`

// TestRecordedStreams replays each recording through the real adapter process and
// checks the exact events, or the exact typed error.
func TestRecordedStreams(t *testing.T) {
	r := newReplay(t)
	c := startAdapter(t, r, nil)
	cases := []providertest.Case{
		{File: "text.http", Events: []string{`1 text "Hello"`, `2 text ", world!"`,
			`3 usage prompt=3560 completion=6 total=3566 cache_read=2048 cache_write=1500`, `4 finish end_turn`}},
		{File: "tool_use.http", Events: []string{
			`1 text "Let me compute both."`,
			`2 tool_call 0 id=toolu_01A name=calc args=""`,
			`3 tool_call 0 id= name= args=""`,
			`4 tool_call 0 id= name= args="{\"expres"`,
			`5 tool_call 0 id= name= args="sion\": \"17*23\"}"`,
			`6 tool_call 1 id=toolu_01B name=calc args=""`,
			`7 tool_call 1 id= name= args="{\"expression\": \"19*29\"}"`,
			`8 usage prompt=420 completion=97 total=517`,
			`9 finish tool_use`,
		}},
		{File: "thinking.http", Events: []string{
			`1 reasoning "Two products, "`, `2 reasoning "then a sum."`, `3 text "942"`,
			`4 reasoning_state ` + fmt.Sprintf("%q", thinkingState),
			`5 usage prompt=36 completion=61 total=97`, `6 finish end_turn`,
		}},
		{File: "max_tokens.http", Events: []string{`1 text "Once upon a"`, `2 usage prompt=10 completion=4 total=14`, `3 finish max_tokens`}},
		{File: "refusal.http", Events: []string{`1 text "I can't help with that."`, `2 usage prompt=10 completion=8 total=18`, `3 finish content_filter`}},
		{File: "rate_limit.http", Err: &providers.Error{Kind: providers.KindRateLimit, RetryAfter: 12 * time.Second, Retryable: true,
			Status: 429, Message: "anthropic: HTTP 429: rate_limit_error: This request would exceed the rate limit for your organization of 50 requests per minute."}},
		{File: "overloaded.http", Err: &providers.Error{Kind: providers.KindOverloaded, Retryable: true,
			Status: 529, Message: "anthropic: HTTP 529: overloaded_error: Overloaded"}},
		{File: "overloaded_in_stream.http", Events: []string{`1 text "Partial"`}, Err: &providers.Error{Kind: providers.KindOverloaded, Retryable: true,
			Message: "anthropic: in stream: overloaded_error: Overloaded"}},
		{File: "auth.http", Err: &providers.Error{Kind: providers.KindAuth, Status: 401, Message: "anthropic: HTTP 401: authentication_error: invalid x-api-key"}},
		{File: "context_length.http", Err: &providers.Error{Kind: providers.KindContextOverflow,
			Status: 400, Message: "anthropic: HTTP 400: invalid_request_error: prompt is too long: 208123 tokens > 200000 maximum"}},
		{File: "no_stop.http", Events: []string{`1 text "Hello"`, `2 text ", world!"`},
			Err: &providers.Error{Kind: providers.KindProvider, Retryable: true, Message: "anthropic: stream ended before message_stop"}},
		{File: "cut.http", Events: []string{
			`1 text "Let me compute both."`, `2 tool_call 0 id=toolu_01A name=calc args=""`, `3 tool_call 0 id= name= args=""`,
		}, Err: &providers.Error{Kind: providers.KindProvider, Retryable: true, Message: "anthropic: stream interrupted: unexpected EOF"}},
	}
	providertest.CheckRecordings(t, r, c, cases)
}

// TestRequestSent checks what reaches the API: path, key and version headers, the
// system prompt apart with a cache breakpoint, images both ways, signed thinking sent
// back first and unchanged, tool_use input as an object, consecutive tool results in
// one user message (errors marked), tools with their schemas, tool_choice, max_tokens
// and thinking.
func TestRequestSent(t *testing.T) {
	r := newReplay(t)
	c := startAdapter(t, r, map[string]string{"thinking_budget": "2048"})
	r.Use("text.http")
	req := &providers.ChatRequest{
		ToolChoice: "required",
		Messages: []*providers.Message{
			{Role: providers.RoleSystem, Content: []*providers.Part{{Type: providers.PartText, Text: "You compute."}}},
			{Role: providers.RoleUser, Content: []*providers.Part{{Type: providers.PartText, Text: "What is in these?"},
				{Type: providers.PartImage, ImageData: []byte{0x89, 'P', 'N', 'G'}, MediaType: "image/png"},
				{Type: providers.PartImage, ImageUrl: "https://example.com/cat.jpg"}}},
			{Role: providers.RoleAssistant, Reasoning: "Two products, then a sum.", ReasoningState: thinkingState,
				Content:   []*providers.Part{{Type: providers.PartText, Text: "Computing."}},
				ToolCalls: []*providers.ToolCall{{Id: "toolu_01A", Name: "calc", Arguments: `{"expression":"17*23"}`}, {Id: "toolu_01B", Name: "calc", Arguments: `not json`}}},
			{Role: providers.RoleTool, ToolCallId: "toolu_01A", Content: []*providers.Part{{Type: providers.PartText, Text: "391"}}},
			{Role: providers.RoleTool, ToolCallId: "toolu_01B", Content: []*providers.Part{{Type: providers.PartText, Text: "Error: bad expression"}}},
			{Role: providers.RoleUser, Content: []*providers.Part{{Type: providers.PartText, Text: "And the sum?"}}},
		},
		Tools: []*providers.Tool{{Name: "calc", Description: "Evaluate arithmetic.",
			InputSchema: `{"type":"object","properties":{"expression":{"type":"string"}},"required":["expression"],"additionalProperties":false}`}},
	}
	if _, err := run(t, c, req); err != io.EOF {
		t.Fatalf("stream: %v", err)
	}
	got := r.Last()
	if got.Path != "/v1/messages" || got.Header.Get("X-Api-Key") != "sk-ant-test" || got.Header.Get("Anthropic-Version") == "" {
		t.Fatalf("path %s, headers %v", got.Path, got.Header)
	}
	want := `{
 "max_tokens": 4096,
 "messages": [
  {"role": "user", "content": [
   {"type": "text", "text": "What is in these?"},
   {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="}},
   {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}}]},
  {"role": "assistant", "content": [
   {"type": "thinking", "thinking": "Two products, then a sum.", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},
   {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"},
   {"type": "text", "text": "Computing."},
   {"type": "tool_use", "id": "toolu_01A", "name": "calc", "input": {"expression": "17*23"}},
   {"type": "tool_use", "id": "toolu_01B", "name": "calc", "input": {}}]},
  {"role": "user", "content": [
   {"type": "tool_result", "tool_use_id": "toolu_01A", "is_error": false, "content": [{"type": "text", "text": "391"}]},
   {"type": "tool_result", "tool_use_id": "toolu_01B", "is_error": true, "content": [{"type": "text", "text": "Error: bad expression"}]}]},
  {"role": "user", "content": [{"type": "text", "text": "And the sum?"}]}
 ],
 "model": "claude-sonnet-4-5",
 "stream": true,
 "system": [{"type": "text", "text": "You compute.", "cache_control": {"type": "ephemeral"}}],
 "thinking": {"type": "enabled", "budget_tokens": 2048},
 "tool_choice": {"type": "any"},
 "tools": [{"name": "calc", "description": "Evaluate arithmetic.", "cache_control": {"type": "ephemeral"},
  "input_schema": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"], "additionalProperties": false}}]
}`
	if g, w := canonical(t, got.Body), canonical(t, []byte(want)); g != w {
		t.Fatalf("request body:\n%s\nwant:\n%s", g, w)
	}
}

// TestRecordingsDecodeAsTheSDKsTypes keeps the recordings honest: every SSE event
// decodes into the SDK's MessageStreamEventUnion with the type its event line names,
// and every error body into the SDK's ErrorResponse.
func TestRecordingsDecodeAsTheSDKsTypes(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.http")
	if len(files) < 10 {
		t.Fatalf("only %d recordings", len(files))
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			var e sdk.ErrorResponse
			if err := json.Unmarshal(body, &e); err != nil || e.Error.Type == "" || e.Error.Message == "" {
				t.Errorf("%s: error body does not decode as sdk.ErrorResponse: %v %+v", f, err, e)
			}
			continue
		}
		event := ""
		for _, line := range strings.Split(string(body), "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event != "ping" && event != "error":
				var ev sdk.MessageStreamEventUnion
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev); err != nil || ev.Type != event {
					t.Errorf("%s: %q event decodes as %q: %v", f, event, ev.Type, err)
				}
			case strings.HasPrefix(line, "data: ") && event == "error":
				var e sdk.ErrorResponse
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &e); err != nil || e.Error.Type == "" {
					t.Errorf("%s: error event: %v", f, err)
				}
			}
		}
	}
}

func TestConfigureRefusesBadOptions(t *testing.T) {
	r := newReplay(t)
	for opts, want := range map[string]string{
		"color=blue":                           `unknown option "color"`,
		"max_tokens=lots":                      `max_tokens "lots": want a whole number of tokens`,
		"thinking_budget=-5":                   `thinking_budget "-5"`,
		"thinking_budget=5000,max_tokens=1000": "thinking_budget 5000 must be below max_tokens 1000",
		"cache=always":                         `cache "always": want system or off`,
	} {
		extra := map[string]string{}
		for _, kv := range strings.Split(opts, ",") {
			k, v, _ := strings.Cut(kv, "=")
			extra[k] = v
		}
		o := map[string]string{"base_url": r.URL, "api_key": "k"}
		for k, v := range extra {
			o[k] = v
		}
		_, err := providers.Start(context.Background(), providers.ClientConfig{Name: "anthropic", Command: adapterBin, Options: o})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", opts, err, want)
		}
	}
}

// The run's metadata key user_id becomes the Messages API's metadata.user_id, the one
// field that API's metadata has; other keys are not sent (the API refuses unknown ones).
func TestRunMetadataUserIDReachesTheRequest(t *testing.T) {
	r := newReplay(t)
	c := startAdapter(t, r, nil)
	for _, tc := range []struct {
		extra map[string]string
		want  string
	}{
		{map[string]string{"user_id": "u-4f2a", "team": "ai"}, `{"user_id":"u-4f2a"}`},
		{map[string]string{"team": "ai"}, ``},
	} {
		r.Use("text.http")
		req := &providers.ChatRequest{Messages: []*providers.Message{{Role: providers.RoleUser, Content: []*providers.Part{{Type: providers.PartText, Text: "hi"}}}},
			Metadata: &providers.Metadata{Extra: tc.extra}}
		if _, err := run(t, c, req); err != io.EOF {
			t.Fatal(err)
		}
		var body struct{ Metadata json.RawMessage }
		if err := json.Unmarshal(r.Last().Body, &body); err != nil {
			t.Fatal(err)
		}
		if string(body.Metadata) != tc.want {
			t.Fatalf("%v: metadata %s, want %q", tc.extra, body.Metadata, tc.want)
		}
	}
}
