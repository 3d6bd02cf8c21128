package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/providers"
	"github.com/agenthost/agenthost/providers/providertest"
)

var adapterBin string

func TestMain(m *testing.M) {
	adapterBin = testbin.Must(testbin.OpenAI)
	code := m.Run()
	providers.CleanupClients()
	testbin.Cleanup()
	os.Exit(code)
}

// newReplay is a loopback OpenAI-compatible server replaying testdata's recordings.
func newReplay(t *testing.T) *providertest.Replay { return providertest.NewReplay(t, "testdata") }

func startAdapter(t *testing.T, r *providertest.Replay) *providers.Client {
	t.Helper()
	return startAdapterWith(t, r, nil)
}

// startAdapterWith starts the adapter with extra options.
func startAdapterWith(t *testing.T, r *providertest.Replay, extra map[string]string) *providers.Client {
	t.Helper()
	opts := map[string]string{"base_url": r.URL + "/v1", "api_key": "sk-test", "model": "gpt-4o-mini"}
	for k, v := range extra {
		opts[k] = v
	}
	return providertest.Start(t, providers.ClientConfig{Name: "openai", Command: adapterBin, Options: opts})
}

var (
	hello            = providertest.Hello
	run              = providertest.Run
	canonical        = providertest.Canonical
	canonicalCompact = providertest.CanonicalCompact
)

// TestRecordedStreams replays each recording through the real adapter process
// and checks the exact events, or the exact typed error.
func TestRecordedStreams(t *testing.T) {
	r := newReplay(t)
	c := startAdapter(t, r)
	cases := []providertest.Case{
		{File: "text.http", Events: []string{`1 text "Hello"`, `2 text ", world"`, `3 text "!"`, `4 finish end_turn`}},
		{File: "tool_call.http", Events: []string{
			`1 tool_call 0 id=call_abc123 name=calc args=""`,
			`2 tool_call 0 id= name= args="{\"expr"`,
			`3 tool_call 0 id= name= args="ession\":\"17*23\"}"`,
			`4 finish tool_use`,
		}},
		{File: "parallel_tool_calls.http", Events: []string{
			`1 tool_call 0 id=call_1 name=get_weather args=""`,
			`2 tool_call 0 id= name= args="{\"ci"`,
			`3 tool_call 0 id= name= args="ty\": \"Par"`,
			`4 tool_call 0 id= name= args="is\"}"`,
			`5 tool_call 1 id=call_2 name=get_weather args=""`,
			`6 tool_call 1 id= name= args="{\"city\""`,
			`7 tool_call 1 id= name= args=": \"Tokyo\"}"`,
			`8 tool_call 2 id=call_3 name=get_time args=""`,
			`9 tool_call 2 id= name= args="{\"tz\": "`,
			`10 tool_call 2 id= name= args="\"Asia/"`,
			`11 tool_call 2 id= name= args="Tokyo\"}"`,
			`12 finish tool_use`,
		}},
		{File: "usage.http", Events: []string{`1 text "Hi there."`, `2 usage prompt=21 completion=3 total=24`, `3 finish max_tokens`}},
		{File: "reasoning.http", Events: []string{`1 reasoning "The user"`, `2 reasoning " greets me."`, `3 reasoning "(ollama field)"`, `4 text "Hello!"`, `5 finish end_turn`}},
		{File: "rate_limit.http", Err: &providers.Error{Kind: providers.KindRateLimit, RetryAfter: 7 * time.Second, Retryable: true,
			Status: 429, Message: "openai: HTTP 429: Rate limit reached for gpt-4o-mini in organization org-test on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 7s."}},
		{File: "quota.http", Err: &providers.Error{Kind: providers.KindRateLimit,
			Status: 429, Message: "openai: HTTP 429: You exceeded your current quota, please check your plan and billing details."}},
		{File: "refusal.http", Events: []string{`1 text "I'm sorry, "`, `2 text "I can't help with that."`, `3 finish end_turn`}},
		{File: "server_error.http", Err: &providers.Error{Kind: providers.KindOverloaded, Retryable: true,
			Status: 500, Message: "openai: HTTP 500: The server had an error while processing your request. Sorry about that!"}},
		{File: "context_length.http", Err: &providers.Error{Kind: providers.KindContextOverflow,
			Status: 400, Message: "openai: HTTP 400: This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages."}},
		{File: "auth.http", Err: &providers.Error{Kind: providers.KindAuth,
			Status: 401, Message: "openai: HTTP 401: Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys."}},
		{File: "bad_request.http", Err: &providers.Error{Kind: providers.KindInvalidRequest,
			Status: 400, Message: "openai: HTTP 400: Invalid schema for function 'calc': 'object' is not valid under any of the given schemas."}},
		{File: "cut.http", Events: []string{`1 text "The answer"`, `2 text " is"`},
			Err: &providers.Error{Kind: providers.KindProvider, Retryable: true, Message: "openai: stream interrupted: unexpected EOF"}},
		{File: "no_finish.http", Events: []string{`1 text "The answer"`},
			Err: &providers.Error{Kind: providers.KindProvider, Retryable: true, Message: "openai: stream ended before a finish_reason"}},
		{File: "malformed.http", Events: []string{`1 text "Hi"`},
			Err: &providers.Error{Kind: providers.KindProvider, Message: "openai: malformed stream chunk: unexpected end of JSON input"}},
	}
	providertest.CheckRecordings(t, r, c, cases)
}

// TestRequestSent checks what reaches the server: path (base_url), bearer
// token (api_key), the default model from the options, messages of every
// role, tools, tool_choice, response_format, max_tokens and stream_options.
func TestRequestSent(t *testing.T) {
	r := newReplay(t)
	c := startAdapter(t, r)
	r.Use("text.http")
	req := &providers.ChatRequest{
		Messages: []*providers.Message{
			{Role: providers.RoleSystem, Content: []*providers.Part{{Type: providers.PartText, Text: "You are terse."}}},
			{Role: providers.RoleUser, Content: []*providers.Part{
				{Type: providers.PartText, Text: "What is 17*23? And what is in this picture?"},
				{Type: providers.PartImage, ImageUrl: "https://example.com/cat.png"},
				{Type: providers.PartImage, ImageData: []byte("PNG"), MediaType: "image/png"},
			}},
			{Role: providers.RoleAssistant, Reasoning: "use calc", Content: []*providers.Part{{Type: providers.PartText, Text: "Let me compute."}},
				ToolCalls: []*providers.ToolCall{{Id: "call_1", Name: "calc", Arguments: `{"expression":"17*23"}`}}},
			{Role: providers.RoleTool, ToolCallId: "call_1", Content: []*providers.Part{{Type: providers.PartText, Text: "391"}}},
		},
		Tools: []*providers.Tool{{Name: "calc", Description: "Evaluate an arithmetic expression",
			InputSchema: `{"type":"object","properties":{"expression":{"type":"string"}},"required":["expression"]}`}},
		ToolChoice:     "required",
		ResponseFormat: `{"type":"object","properties":{"answer":{"type":"integer"}}}`,
		MaxTokens:      256,
		Metadata:       &providers.Metadata{Session: "s1", Run: "r1", CallIndex: 3},
	}
	if _, err := run(t, c, req); err != io.EOF {
		t.Fatalf("stream ended with %v", err)
	}
	got := r.Last()
	if got.Path != "/v1/chat/completions" || got.Header.Get("Authorization") != "Bearer sk-test" {
		t.Fatalf("path %q, authorization %q", got.Path, got.Header.Get("Authorization"))
	}
	want, err := os.ReadFile("testdata/request_full.json")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := canonical(t, got.Body), canonical(t, want); a != b {
		t.Fatalf("request body:\n%s\nwant:\n%s", a, b)
	}
}

// TestEnvFallback: with no base_url/api_key options the adapter uses
// OPENAI_BASE_URL and OPENAI_API_KEY, which reach it only because the
// manifest's env list passes them (nothing else of the host env does).
func TestEnvFallback(t *testing.T) {
	r := newReplay(t)
	r.Use("text.http")
	c, err := providers.Start(context.Background(), providers.ClientConfig{
		Name:    "openai",
		Command: adapterBin,
		Env:     []string{"OPENAI_BASE_URL=" + r.URL + "/compat/v1", "OPENAI_API_KEY=sk-from-env"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	_, err = run(t, c, hello())
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Kind != providers.KindInvalidRequest || pe.Message != "openai: no model: set the request's model or the model option" {
		t.Fatalf("without a model: %v", err)
	}

	req := hello()
	req.Model = "llama3.2"
	if _, err := run(t, c, req); err != io.EOF {
		t.Fatalf("stream ended with %v", err)
	}
	got := r.Last()
	var body struct{ Model string }
	json.Unmarshal(got.Body, &body)
	if got.Path != "/compat/v1/chat/completions" || got.Header.Get("Authorization") != "Bearer sk-from-env" || body.Model != "llama3.2" {
		t.Fatalf("path %q, authorization %q, model %q", got.Path, got.Header.Get("Authorization"), body.Model)
	}
}

// TestToolImagesFollowAsAUserMessage: Chat Completions takes only text in a tool
// message, so images a tool returned are sent in one user message after the tool
// messages of that turn (never between them), introduced by the call they came from.
func TestToolImagesFollowAsAUserMessage(t *testing.T) {
	r := newReplay(t)
	c := startAdapter(t, r)
	r.Use("text.http")
	req := &providers.ChatRequest{Messages: []*providers.Message{
		{Role: providers.RoleUser, Content: []*providers.Part{{Type: providers.PartText, Text: "Plot both."}}},
		{Role: providers.RoleAssistant, ToolCalls: []*providers.ToolCall{
			{Id: "c1", Name: "plot", Arguments: `{}`}, {Id: "c2", Name: "plot", Arguments: `{}`}}},
		{Role: providers.RoleTool, ToolCallId: "c1", Content: []*providers.Part{
			{Type: providers.PartText, Text: "plotted"}, {Type: providers.PartImage, ImageData: []byte("PNG1"), MediaType: "image/png"}}},
		{Role: providers.RoleTool, ToolCallId: "c2", Content: []*providers.Part{{Type: providers.PartText, Text: "no image"}}},
		{Role: providers.RoleUser, Content: []*providers.Part{{Type: providers.PartText, Text: "Thanks."}}},
	}}
	if _, err := run(t, c, req); err != io.EOF {
		t.Fatalf("stream ended with %v", err)
	}
	var body struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(r.Last().Body, &body); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range body.Messages {
		got = append(got, canonicalCompact(t, m))
	}
	want := []string{
		`{"content":"Plot both.","role":"user"}`,
		`{"role":"assistant","tool_calls":[{"function":{"arguments":"{}","name":"plot"},"id":"c1","type":"function"},{"function":{"arguments":"{}","name":"plot"},"id":"c2","type":"function"}]}`,
		`{"content":"plotted","role":"tool","tool_call_id":"c1"}`,
		`{"content":"no image","role":"tool","tool_call_id":"c2"}`,
		`{"content":[{"text":"Image returned by tool call c1:","type":"text"},{"image_url":{"url":"data:image/png;base64,UE5HMQ=="},"type":"image_url"}],"role":"user"}`,
		`{"content":"Thanks.","role":"user"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("messages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// With send_reasoning the earlier reasoning goes back in the field the server reads;
// without it, never (TestRequestSent).
func TestSendReasoningOption(t *testing.T) {
	r := newReplay(t)
	c, err := providers.Start(context.Background(), providers.ClientConfig{Name: "openai", Command: adapterBin,
		Options: map[string]string{"base_url": r.URL + "/v1", "api_key": "k", "model": "m", "send_reasoning": "reasoning_content"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r.Use("text.http")
	req := hello()
	req.Messages = append(req.Messages,
		&providers.Message{Role: providers.RoleAssistant, Reasoning: "think first", Content: []*providers.Part{{Type: providers.PartText, Text: "Hi"}}},
		&providers.Message{Role: providers.RoleUser, Content: []*providers.Part{{Type: providers.PartText, Text: "again"}}})
	if _, err := run(t, c, req); err != io.EOF {
		t.Fatal(err)
	}
	var body struct {
		Messages []map[string]any `json:"messages"`
	}
	json.Unmarshal(r.Last().Body, &body)
	if got := body.Messages[1]["reasoning_content"]; got != "think first" {
		t.Fatalf("assistant message sent as %v", body.Messages[1])
	}
	_, err = providers.Start(context.Background(), providers.ClientConfig{Name: "openai", Command: adapterBin,
		Options: map[string]string{"send_reasoning": "thoughts"}})
	if err == nil || !strings.Contains(err.Error(), `send_reasoning "thoughts"`) {
		t.Fatalf("bad option: %v", err)
	}
}

// The run's metadata (run --meta) reaches the request's `metadata`; `store` is sent only
// when the store option asks for it, since storing is the user's choice (metadata.go).
func TestRunMetadataReachesTheRequest(t *testing.T) {
	r := newReplay(t)
	for _, tc := range []struct {
		store, want string
	}{
		{"", `{"metadata":{"team":"ai","ticket":"T-1"}}`},
		{"true", `{"metadata":{"team":"ai","ticket":"T-1"},"store":true}`},
	} {
		opts := map[string]string{"base_url": r.URL + "/v1", "api_key": "k", "model": "m"}
		if tc.store != "" {
			opts["store"] = tc.store
		}
		c := providertest.Start(t, providers.ClientConfig{Name: "openai", Command: adapterBin, Options: opts})
		r.Use("text.http")
		req := hello()
		req.Metadata = &providers.Metadata{Session: "s", Run: "r", Extra: map[string]string{"team": "ai", "ticket": "T-1"}}
		if _, err := run(t, c, req); err != io.EOF {
			t.Fatal(err)
		}
		var body map[string]json.RawMessage
		if err := json.Unmarshal(r.Last().Body, &body); err != nil {
			t.Fatal(err)
		}
		got := map[string]json.RawMessage{"metadata": body["metadata"]}
		if s, ok := body["store"]; ok {
			got["store"] = s
		}
		b, _ := json.Marshal(got)
		if canonicalCompact(t, b) != tc.want {
			t.Fatalf("store=%q: sent %s, want %s", tc.store, b, tc.want)
		}
	}
	// Without metadata the field is absent.
	c := startAdapter(t, r)
	r.Use("text.http")
	if _, err := run(t, c, hello()); err != io.EOF {
		t.Fatal(err)
	}
	if strings.Contains(string(r.Last().Body), `"metadata"`) || strings.Contains(string(r.Last().Body), `"store"`) {
		t.Fatalf("sent %s", r.Last().Body)
	}
}
