package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/agenthost/agenthost/providers"
)

// Provider implements providers.Provider against the Anthropic Messages API.
type Provider struct {
	mu     sync.Mutex
	client sdk.Client
	cfg    config
}

type config struct {
	model          string
	maxTokens      int64
	thinkingBudget int64
	cache          bool
	inputMedia     string // the input_media option (media.go)
}

// New returns a provider configured from the environment only; Configure applies the
// manifest's options on top.
func New() *Provider {
	p := &Provider{}
	// No key yet is not an error here: Configure, before any call, says so.
	if err := p.configure(nil, false); err != nil {
		panic(err) // unreachable: no options, nothing to reject
	}
	return p
}

var knownOptions = []string{"api_key", "base_url", "cache", "input_media", "max_tokens", "model", "thinking_budget"}

// Configure (re)builds the SDK client from options and the environment.
func (p *Provider) Configure(_ context.Context, options map[string]string) error {
	return p.configure(options, true)
}

// configure is Configure; requireKey refuses the hosted API with no key.
func (p *Provider) configure(options map[string]string, requireKey bool) error {
	for k := range options {
		if !slices.Contains(knownOptions, k) {
			return fmt.Errorf("anthropic: unknown option %q (known: %s)", k, strings.Join(knownOptions, ", "))
		}
	}
	cfg := config{model: firstSet(options["model"], os.Getenv("ANTHROPIC_MODEL")), maxTokens: 4096, cache: true}
	for name, dst := range map[string]*int64{"max_tokens": &cfg.maxTokens, "thinking_budget": &cfg.thinkingBudget} {
		if v, ok := options[name]; ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 || n > 1<<31 {
				return fmt.Errorf("anthropic: %s %q: want a whole number of tokens", name, v)
			}
			*dst = n
		}
	}
	switch options["cache"] {
	case "", "system":
	case "off":
		cfg.cache = false
	default:
		return fmt.Errorf("anthropic: cache %q: want system or off", options["cache"])
	}
	if _, err := mediaFor("", options["input_media"]); err != nil {
		return fmt.Errorf("anthropic: %w", err)
	}
	cfg.inputMedia = options["input_media"]
	if cfg.thinkingBudget > 0 && cfg.thinkingBudget >= cfg.maxTokens {
		return fmt.Errorf("anthropic: thinking_budget %d must be below max_tokens %d", cfg.thinkingBudget, cfg.maxTokens)
	}
	opts := []option.RequestOption{option.WithMaxRetries(0)}
	baseURL := firstSet(options["base_url"], os.Getenv("ANTHROPIC_BASE_URL"))
	if baseURL != "" {
		opts = append(opts, option.WithBaseURL(baseURL))
	}
	key := firstSet(options["api_key"], os.Getenv("ANTHROPIC_API_KEY"))
	if key != "" {
		opts = append(opts, option.WithAPIKey(key))
	} else if requireKey && baseURL == "" { // the hosted API always needs one; a local server may not
		return providers.MissingKey("ANTHROPIC_API_KEY")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.client = sdk.NewClient(opts...)
	p.cfg = cfg
	return nil
}

// Info describes the adapter; the model list is the configured default only.
func (p *Provider) Info(context.Context) (*providers.Info, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var models []string
	if p.cfg.model != "" {
		models = []string{p.cfg.model}
	}
	return &providers.Info{Name: "anthropic", Models: models,
		Capabilities: []string{"tools", "reasoning", "images", "streaming", "prompt_cache"}}, nil
}

// block is one content block of the answer being streamed, by its index.
type block struct {
	kind      string // text | tool_use | thinking | redacted_thinking | other
	toolIndex int32  // the block's tool-call index, for tool_use
	thinking  strings.Builder
	signature string
	data      string // redacted_thinking
}

// Stream runs one streaming Messages call.
func (p *Provider) Stream(ctx context.Context, req *providers.ChatRequest, send func(*providers.ChatEvent) error) error {
	p.mu.Lock()
	client, cfg := p.client, p.cfg
	p.mu.Unlock()
	if req.GetModel() != "" {
		cfg.model = req.GetModel()
	}
	if cfg.model == "" {
		return &providers.Error{Kind: providers.KindInvalidRequest, Message: "anthropic: no model: set the request's model, the model option or ANTHROPIC_MODEL"}
	}
	m, err := mediaFor(cfg.model, cfg.inputMedia)
	if err == nil {
		err = refuseMedia(req, cfg.model, m) // before the call: the API is never asked
	}
	if err != nil {
		return &providers.Error{Kind: providers.KindInvalidRequest, Message: "anthropic: " + err.Error()}
	}
	params, err := buildParams(req, cfg)
	if err != nil {
		return &providers.Error{Kind: providers.KindInvalidRequest, Message: "anthropic: " + err.Error()}
	}
	stream := client.Messages.NewStreaming(ctx, params)
	defer stream.Close()

	a := &answer{send: send, blocks: map[int64]*block{}, usage: &providers.Usage{}}
	for stream.Next() {
		if err := a.on(stream.Current()); err != nil {
			return err
		}
	}
	if err := stream.Err(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return mapError(err)
	}
	return a.finish()
}

// answer is the state of one streamed answer: its content blocks by index, in the
// order they started, the tool calls so far, usage and the stop reason.
type answer struct {
	send      func(*providers.ChatEvent) error
	blocks    map[int64]*block
	order     []int64
	tools     int32
	usage     *providers.Usage
	stop      string
	gotStop   bool
	completed bool
}

// on handles one server-sent event of the stream.
func (a *answer) on(ev sdk.MessageStreamEventUnion) error {
	switch ev.Type {
	case "message_start":
		u := ev.Message.Usage
		a.usage.CacheReadTokens = u.CacheReadInputTokens
		a.usage.CacheWriteTokens = u.CacheCreationInputTokens
		a.usage.PromptTokens = u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
		a.usage.CompletionTokens = u.OutputTokens
	case "content_block_start":
		return a.blockStart(ev)
	case "content_block_delta":
		return a.blockDelta(ev)
	case "message_delta":
		if ev.Delta.StopReason != "" {
			a.stop, a.gotStop = stopReason(string(ev.Delta.StopReason)), true
		}
		if ev.Usage.OutputTokens > 0 {
			a.usage.CompletionTokens = ev.Usage.OutputTokens
		}
	case "message_stop":
		a.completed = true
	}
	return nil
}

// blockStart opens a content block; a tool call's id and name, and the first text or
// thinking a block may carry, are sent at once.
func (a *answer) blockStart(ev sdk.MessageStreamEventUnion) error {
	cb := ev.ContentBlock
	b := &block{kind: cb.Type}
	a.blocks[ev.Index], a.order = b, append(a.order, ev.Index)
	switch cb.Type {
	case "tool_use":
		b.toolIndex = a.tools
		a.tools++
		return a.send(providers.ToolCallEvent(&providers.ToolCallDelta{Index: b.toolIndex, Id: cb.ID, Name: cb.Name}))
	case "thinking":
		b.signature = cb.Signature
		if cb.Thinking != "" {
			b.thinking.WriteString(cb.Thinking)
			return a.send(providers.ReasoningEvent(cb.Thinking))
		}
	case "redacted_thinking":
		b.data = cb.Data
	case "text":
		if cb.Text != "" {
			return a.send(providers.TextEvent(cb.Text))
		}
	}
	return nil
}

// blockDelta continues a started block: text, a tool call's arguments, thinking (kept
// for reasoning_state) or its signature.
func (a *answer) blockDelta(ev sdk.MessageStreamEventUnion) error {
	b := a.blocks[ev.Index]
	if b == nil {
		return &providers.Error{Kind: providers.KindProvider, Message: fmt.Sprintf("anthropic: delta for block %d, which never started", ev.Index)}
	}
	switch d := ev.Delta; d.Type {
	case "text_delta":
		return a.send(providers.TextEvent(d.Text))
	case "input_json_delta":
		return a.send(providers.ToolCallEvent(&providers.ToolCallDelta{Index: b.toolIndex, Arguments: d.PartialJSON}))
	case "thinking_delta":
		b.thinking.WriteString(d.Thinking)
		return a.send(providers.ReasoningEvent(d.Thinking))
	case "signature_delta":
		b.signature += d.Signature
	}
	return nil
}

// finish ends a stream that closed without a transport error: one that never reached
// message_stop (with a stop reason) is a retryable failure; otherwise the thinking to
// send back, the usage and the finish event follow.
func (a *answer) finish() error {
	if !a.completed || !a.gotStop {
		return &providers.Error{Kind: providers.KindProvider, Message: "anthropic: stream ended before message_stop", Retryable: true}
	}
	if state := reasoningState(a.blocks, a.order); state != "" {
		if err := a.send(providers.ReasoningStateEvent(state)); err != nil {
			return err
		}
	}
	a.usage.TotalTokens = a.usage.PromptTokens + a.usage.CompletionTokens
	if err := a.send(providers.UsageEvent(a.usage)); err != nil {
		return err
	}
	return a.send(providers.FinishEvent(a.stop))
}

// thinkingBlock is how thinking travels in reasoning_state: exactly what the API
// needs back (its signature covers the text).
type thinkingBlock struct {
	Type      string `json:"type"` // thinking | redacted_thinking
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
}

func reasoningState(blocks map[int64]*block, order []int64) string {
	var out []thinkingBlock
	for _, i := range order {
		switch b := blocks[i]; b.kind {
		case "thinking":
			out = append(out, thinkingBlock{Type: "thinking", Thinking: b.thinking.String(), Signature: b.signature})
		case "redacted_thinking":
			out = append(out, thinkingBlock{Type: "redacted_thinking", Data: b.data})
		}
	}
	if len(out) == 0 {
		return ""
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// stopReason maps Anthropic's stop_reason onto the protocol's vocabulary.
func stopReason(s string) string {
	switch s {
	case "end_turn", "stop_sequence":
		return providers.StopEndTurn
	case "tool_use":
		return providers.StopToolUse
	case "max_tokens", "model_context_window_exceeded":
		return providers.StopMaxTokens
	case "refusal":
		return providers.StopContentFilter
	}
	return s // pause_turn and whatever comes next: "other" to the loop
}

func firstSet(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
