package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agenthost/agenthost/providers"
)

// Provider implements providers.Provider against one OpenAI-compatible server.
type Provider struct {
	mu         sync.Mutex
	client     sdk.Client
	model      string
	embedModel string     // default model of Embed (embed.go)
	maxTokens  string     // request field that carries max_tokens
	reasoning  string     // field that carries earlier reasoning back ("" = not sent)
	meta       metaPolicy // what happens to the run's metadata (metadata.go)
	inputMedia string     // the input_media option: what the model takes besides text (media.go)
}

// New returns a provider configured from the environment only; Configure
// applies the manifest's options on top.
func New() *Provider {
	p := &Provider{}
	// No key yet is not an error here: Configure, before any call, says so.
	if err := p.configure(nil, false); err != nil {
		panic(err) // unreachable: no options, nothing to reject
	}
	return p
}

var knownOptions = []string{"api_key", "base_url", "embed_model", "input_media", "max_tokens_field", "model", "send_reasoning", "store"}

// Configure (re)builds the SDK client from options and the environment.
func (p *Provider) Configure(_ context.Context, options map[string]string) error {
	return p.configure(options, true)
}

// configure is Configure; requireKey refuses the hosted API with no key.
func (p *Provider) configure(options map[string]string, requireKey bool) error {
	for k := range options {
		if !slices.Contains(knownOptions, k) {
			return fmt.Errorf("openai: unknown option %q (known: %s)", k, strings.Join(knownOptions, ", "))
		}
	}
	maxTokens := options["max_tokens_field"]
	switch maxTokens {
	case "":
		maxTokens = "max_tokens"
	case "max_tokens", "max_completion_tokens":
	default:
		return fmt.Errorf("openai: max_tokens_field %q: want max_tokens or max_completion_tokens", maxTokens)
	}
	switch options["send_reasoning"] {
	case "", "reasoning_content", "reasoning":
	default:
		return fmt.Errorf("openai: send_reasoning %q: want reasoning_content or reasoning", options["send_reasoning"])
	}
	if _, err := mediaFor("", options["input_media"]); err != nil {
		return fmt.Errorf("openai: %w", err)
	}
	opts := []option.RequestOption{option.WithMaxRetries(0)}
	baseURL := firstSet(options["base_url"], os.Getenv("OPENAI_BASE_URL"))
	meta, err := newMetaPolicy(options["store"], baseURL)
	if err != nil {
		return err
	}
	if baseURL != "" {
		opts = append(opts, option.WithBaseURL(baseURL))
	}
	key := firstSet(options["api_key"], os.Getenv("OPENAI_API_KEY"))
	if key != "" {
		opts = append(opts, option.WithAPIKey(key))
	} else if requireKey && baseURL == "" { // the hosted API always needs one; a local server may not
		return providers.MissingKey("OPENAI_API_KEY")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.client = sdk.NewClient(opts...)
	p.model = options["model"]
	p.embedModel = options["embed_model"]
	p.maxTokens = maxTokens
	p.reasoning = options["send_reasoning"]
	p.meta = meta
	p.inputMedia = options["input_media"]
	return nil
}

// Info describes the adapter; the model list is the configured default only,
// since listing a server's models is a network call Info should not make.
func (p *Provider) Info(context.Context) (*providers.Info, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var models []string
	if p.model != "" {
		models = []string{p.model}
	}
	return &providers.Info{
		Name:         "openai",
		Models:       models,
		Capabilities: []string{"tools", "reasoning", "images", "response_format", "streaming", providers.CapEmbeddings},
	}, nil
}

// Stream runs one streaming Chat Completions call.
func (p *Provider) Stream(ctx context.Context, req *providers.ChatRequest, send func(*providers.ChatEvent) error) error {
	p.mu.Lock()
	client, model, maxTokens, sendReasoning, meta, inputMedia := p.client, p.model, p.maxTokens, p.reasoning, p.meta, p.inputMedia
	p.mu.Unlock()
	if req.GetModel() != "" {
		model = req.GetModel()
	}
	if model == "" {
		return &providers.Error{Kind: providers.KindInvalidRequest, Message: "openai: no model: set the request's model or the model option"}
	}
	m, err := mediaFor(model, inputMedia)
	if err == nil {
		err = refuseMedia(req, model, m) // before the call: the API is never asked
	}
	if err != nil {
		return &providers.Error{Kind: providers.KindInvalidRequest, Message: "openai: " + err.Error()}
	}
	params, err := buildParams(req, model, maxTokens, sendReasoning)
	if err != nil {
		return &providers.Error{Kind: providers.KindInvalidRequest, Message: "openai: " + err.Error()}
	}
	meta.apply(&params, req.GetMetadata().GetExtra())
	if pc := req.GetPromptCache(); pc.GetEnabled() && pc.GetKey() != "" {
		// OpenAI caches every long prefix on its own; the key routes the requests that
		// share one to the same cache, so more of them find it.
		params.PromptCacheKey = sdk.String(pc.GetKey())
	}

	stream := client.Chat.Completions.NewStreaming(ctx, params)
	defer stream.Close()
	var finish string
	for stream.Next() {
		chunk := stream.Current()
		events, stop, err := chunkEvents(chunk)
		if err != nil {
			return &providers.Error{Kind: providers.KindProvider, Message: "openai: malformed stream chunk: " + err.Error()}
		}
		if stop != "" {
			finish = stop
		}
		for _, ev := range events {
			if err := send(ev); err != nil {
				return err
			}
		}
	}
	if err := stream.Err(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return mapError(err)
	}
	if finish == "" {
		return &providers.Error{Kind: providers.KindProvider, Message: "openai: stream ended before a finish_reason", Retryable: true}
	}
	return send(providers.FinishEvent(finish))
}

// rawChunk holds what the SDK's chunk type does not: the reasoning text that
// Ollama, vLLM and DeepSeek put in non-standard delta fields.
type rawChunk struct {
	Choices []struct {
		Delta struct {
			ReasoningContent string `json:"reasoning_content"`
			Reasoning        string `json:"reasoning"`
		} `json:"delta"`
	} `json:"choices"`
}

// chunkEvents translates one chunk. The finish reason is returned rather than
// sent, because the usage chunk comes after it and Finish must be last.
func chunkEvents(chunk sdk.ChatCompletionChunk) ([]*providers.ChatEvent, string, error) {
	var raw rawChunk
	if err := json.Unmarshal([]byte(chunk.RawJSON()), &raw); err != nil {
		return nil, "", err
	}
	var events []*providers.ChatEvent
	var finish string
	for i, c := range chunk.Choices {
		if c.Index != 0 {
			continue // n > 1 is never requested
		}
		if i < len(raw.Choices) {
			if r := firstSet(raw.Choices[i].Delta.ReasoningContent, raw.Choices[i].Delta.Reasoning); r != "" {
				events = append(events, providers.ReasoningEvent(r))
			}
		}
		if c.Delta.Content != "" {
			events = append(events, providers.TextEvent(c.Delta.Content))
		}
		if c.Delta.Refusal != "" {
			// A refusal is the model's answer; the loop shows it as text.
			events = append(events, providers.TextEvent(c.Delta.Refusal))
		}
		for _, tc := range c.Delta.ToolCalls {
			events = append(events, providers.ToolCallEvent(&providers.ToolCallDelta{
				Index:     int32(tc.Index),
				Id:        tc.ID,
				Name:      tc.Function.Name,
				Arguments: tc.Function.Arguments,
			}))
		}
		if c.FinishReason != "" {
			finish = stopReason(c.FinishReason)
		}
	}
	if chunk.JSON.Usage.Valid() {
		u := chunk.Usage
		events = append(events, providers.UsageEvent(&providers.Usage{
			PromptTokens:     u.PromptTokens,
			CompletionTokens: u.CompletionTokens,
			TotalTokens:      u.TotalTokens,
			CacheReadTokens:  u.PromptTokensDetails.CachedTokens, // part of the prompt's
		}))
	}
	return events, finish, nil
}

// stopReason maps OpenAI's finish_reason onto the protocol's vocabulary.
func stopReason(s string) string {
	switch s {
	case "stop":
		return providers.StopEndTurn
	case "tool_calls", "function_call":
		return providers.StopToolUse
	case "length":
		return providers.StopMaxTokens
	case "content_filter":
		return providers.StopContentFilter
	}
	return s
}

func firstSet(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
