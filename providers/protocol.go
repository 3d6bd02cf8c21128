package providers

import (
	"context"
	"fmt"

	"github.com/agenthost/agenthost/providers/proto"
)

// Protocol types, re-exported from the generated package so that callers need
// only import providers.
type (
	ChatRequest   = providerpb.ChatRequest
	ChatEvent     = providerpb.ChatEvent
	Message       = providerpb.Message
	Part          = providerpb.Part
	ToolCall      = providerpb.ToolCall
	Tool          = providerpb.Tool
	Metadata      = providerpb.Metadata
	PromptCache   = providerpb.PromptCache
	ToolCallDelta = providerpb.ToolCallDelta
	Usage         = providerpb.Usage
	Finish        = providerpb.Finish
	Info          = providerpb.InfoResponse
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Part types.
const (
	PartText  = "text"
	PartImage = "image"
	PartAudio = "audio"
	PartFile  = "file"
)

// Normalised stop reasons carried by Finish events.
const (
	StopEndTurn       = "end_turn"
	StopToolUse       = "tool_use"
	StopMaxTokens     = "max_tokens"
	StopContentFilter = "content_filter"
)

// Provider is what an adapter implements; Serve exposes it over gRPC.
//
// Stream emits the events of one model call through send, which numbers them
// (seq) and fails once the host has gone away. A returned *Error becomes the
// typed error event of the call; any other error is reported as a
// non-retryable KindProvider error.
type Provider interface {
	// Configure receives the manifest's options table. It is called once
	// before anything else, and again after each restart of the process.
	Configure(ctx context.Context, options map[string]string) error
	Info(ctx context.Context) (*Info, error)
	Stream(ctx context.Context, req *ChatRequest, send func(*ChatEvent) error) error
}

// TextEvent returns a text delta event.
func TextEvent(s string) *ChatEvent {
	return &ChatEvent{Event: &providerpb.ChatEvent_Text{Text: s}}
}

// ReasoningEvent returns a reasoning delta event.
func ReasoningEvent(s string) *ChatEvent {
	return &ChatEvent{Event: &providerpb.ChatEvent_Reasoning{Reasoning: s}}
}

// ToolCallEvent returns a tool-call fragment event.
func ToolCallEvent(d *ToolCallDelta) *ChatEvent {
	return &ChatEvent{Event: &providerpb.ChatEvent_ToolCall{ToolCall: d}}
}

// ReasoningStateEvent returns the opaque state the adapter needs back with this answer
// (Message.reasoning_state on the next call).
func ReasoningStateEvent(s string) *ChatEvent {
	return &ChatEvent{Event: &providerpb.ChatEvent_ReasoningState{ReasoningState: s}}
}

// UsageEvent returns a usage event.
func UsageEvent(u *Usage) *ChatEvent {
	return &ChatEvent{Event: &providerpb.ChatEvent_Usage{Usage: u}}
}

// FinishEvent returns the finish event that ends a successful call.
func FinishEvent(stopReason string) *ChatEvent {
	return &ChatEvent{Event: &providerpb.ChatEvent_Finish{Finish: &Finish{StopReason: stopReason}}}
}

// ErrorEvent returns the event that ends a failed call.
func ErrorEvent(e *Error) *ChatEvent {
	return &ChatEvent{Event: &providerpb.ChatEvent_Error{Error: e.proto()}}
}

// TextOf concatenates the text parts of a message; adapters use it where a
// provider wants one string.
func TextOf(m *Message) string {
	var s string
	for _, p := range m.GetContent() {
		if p.GetType() == PartText || p.GetType() == "" {
			s += p.GetText()
		}
	}
	return s
}

// FormatEvent renders an event on one line, e.g. `3 text "Hi"` or
// `5 tool_call 0 id=c1 name=calc args="{\"a\":1}"`; for logs and tests.
func FormatEvent(ev *ChatEvent) string {
	p := fmt.Sprintf("%d ", ev.GetSeq())
	switch e := ev.GetEvent().(type) {
	case *providerpb.ChatEvent_Text:
		return p + fmt.Sprintf("text %q", e.Text)
	case *providerpb.ChatEvent_Reasoning:
		return p + fmt.Sprintf("reasoning %q", e.Reasoning)
	case *providerpb.ChatEvent_ToolCall:
		d := e.ToolCall
		return p + fmt.Sprintf("tool_call %d id=%s name=%s args=%q", d.GetIndex(), d.GetId(), d.GetName(), d.GetArguments())
	case *providerpb.ChatEvent_Usage:
		u := e.Usage
		line := fmt.Sprintf("usage prompt=%d completion=%d total=%d", u.GetPromptTokens(), u.GetCompletionTokens(), u.GetTotalTokens())
		if u.GetCacheReadTokens() != 0 || u.GetCacheWriteTokens() != 0 {
			line += fmt.Sprintf(" cache_read=%d cache_write=%d", u.GetCacheReadTokens(), u.GetCacheWriteTokens())
		}
		return p + line
	case *providerpb.ChatEvent_Finish:
		return p + "finish " + e.Finish.GetStopReason()
	case *providerpb.ChatEvent_Error:
		return p + fmt.Sprintf("error %s %q", e.Error.GetKind(), e.Error.GetMessage())
	case *providerpb.ChatEvent_ReasoningState:
		return p + fmt.Sprintf("reasoning_state %q", e.ReasoningState)
	}
	return p + "empty"
}
