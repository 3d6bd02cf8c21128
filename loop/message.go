package loop

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Role is who wrote a message.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// PartType says what a Part carries.
type PartType string

const (
	PartText  PartType = "text"
	PartImage PartType = "image"
	PartAudio PartType = "audio" // wav or mp3
	PartFile  PartType = "file"  // a document of any MIME type: PDF, text, CSV, ...
)

// Part is one piece of a message's content: text, or media (an image, an audio clip, a
// file). Media is stored once per session as a content-addressed attachment (attach.go):
// a stored or emitted part holds its reference (Attachment, the sha256 of its bytes),
// its sniffed MimeType, Size and Name, never the bytes. An image may also be a URL.
type Part struct {
	Type     PartType `json:"type"`
	Text     string   `json:"text,omitempty"`
	URL      string   `json:"url,omitempty"`
	MimeType string   `json:"mime_type,omitempty"`
	// Attachment is the hex sha256 of the part's bytes, stored in the session.
	Attachment string `json:"attachment,omitempty"`
	Name       string `json:"name,omitempty"` // the file name the client gave, if any
	Size       int64  `json:"size,omitempty"` // bytes
	// Data is the part's bytes in transit: given with input or a tool result (the loop
	// stores them and keeps the reference), and filled in the copy a model call gets.
	// The loop never stores a part holding Data.
	Data []byte `json:"data,omitempty"`
}

// IsMedia reports whether the part is an image, audio or file part.
func (p Part) IsMedia() bool { return p.Type == PartImage || p.Type == PartAudio || p.Type == PartFile }

// TextPart is a convenience for the common case.
func TextPart(s string) Part { return Part{Type: PartText, Text: s} }

// Message is one entry of a conversation, in the OpenAI-style shape every provider
// adapter maps from. The loop appends assistant messages exactly as the model returned
// them; it never re-shapes history.
type Message struct {
	Role       Role       `json:"role"`
	Content    []Part     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
	Reasoning  string     `json:"reasoning,omitempty"`
	// ReasoningState is opaque provider state that must go back with this assistant
	// message on later calls (Anthropic's signed thinking blocks). Stored with it.
	ReasoningState string `json:"reasoning_state,omitempty"`
}

// UserMessage builds a user message holding one text part.
func UserMessage(text string) Message {
	return Message{Role: RoleUser, Content: []Part{TextPart(text)}}
}

// Text joins the message's text parts.
func (m Message) Text() string { return partsText(m.Content) }

func partsText(parts []Part) string {
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0].Text
	}
	n := 0
	for _, p := range parts {
		n += len(p.Text)
	}
	b := make([]byte, 0, n)
	for _, p := range parts {
		b = append(b, p.Text...)
	}
	return string(b)
}

// ToolCall is one function call the model asked for. Arguments stay the raw string the
// model sent, valid JSON or not (rule L5).
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	InputSchema json.RawMessage   `json:"input_schema,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ToolResult is what a tool returns. Done ends the run (rule L7), with Final as the
// final text when it is set.
type ToolResult struct {
	Content    []Part          `json:"content,omitempty"`
	IsError    bool            `json:"is_error,omitempty"`
	Done       bool            `json:"done,omitempty"`
	Final      string          `json:"final,omitempty"`
	Structured json.RawMessage `json:"structured,omitempty"`
}

// TextResult is a successful result holding one text part.
func TextResult(text string) ToolResult { return ToolResult{Content: []Part{TextPart(text)}} }

// ErrorResult is an error result holding one text part.
func ErrorResult(text string) ToolResult {
	return ToolResult{Content: []Part{TextPart(text)}, IsError: true}
}

// Text joins the result's text parts.
func (r ToolResult) Text() string { return partsText(r.Content) }

// Usage counts tokens and money. Totals add up per call.
type Usage struct {
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	TotalTokens      int     `json:"total_tokens"`
	CostUSD          float64 `json:"cost_usd"`
	// Prompt-cache tokens (part of PromptTokens), when the provider reports them.
	CacheReadTokens  int `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	// Provider names the provider that served a model call, when a fallback chain has
	// several (in the call's usage event; a run's total has none).
	Provider string `json:"provider,omitempty"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + o.PromptTokens,
		CompletionTokens: u.CompletionTokens + o.CompletionTokens,
		TotalTokens:      u.TotalTokens + o.TotalTokens,
		CostUSD:          u.CostUSD + o.CostUSD,
		CacheReadTokens:  u.CacheReadTokens + o.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens,
	}
}

// validUTF8 replaces invalid UTF-8 in every string of msgs with U+FFFD (L19): a run keeps
// going on a bad byte instead of failing at the provider. msgs is copied only when
// something changes, so the caller's slice is never modified.
func validUTF8(msgs []Message) []Message {
	var out []Message
	for i, m := range msgs {
		if messageValid(m) {
			continue
		}
		if out == nil {
			out = append([]Message(nil), msgs...)
		}
		m.Content = append([]Part(nil), m.Content...)
		for j := range m.Content {
			p := &m.Content[j]
			p.Text, p.URL, p.MimeType, p.Name = fixUTF8(p.Text), fixUTF8(p.URL), fixUTF8(p.MimeType), fixUTF8(p.Name)
		}
		m.ToolCalls = append([]ToolCall(nil), m.ToolCalls...)
		for j := range m.ToolCalls {
			c := &m.ToolCalls[j]
			c.ID, c.Name, c.Arguments = fixUTF8(c.ID), fixUTF8(c.Name), fixUTF8(c.Arguments)
		}
		m.ToolCallID, m.Name, m.Reasoning = fixUTF8(m.ToolCallID), fixUTF8(m.Name), fixUTF8(m.Reasoning)
		m.ReasoningState = fixUTF8(m.ReasoningState)
		out[i] = m
	}
	if out == nil {
		return msgs
	}
	return out
}

func messageValid(m Message) bool {
	ok := utf8.ValidString(m.ToolCallID) && utf8.ValidString(m.Name) && utf8.ValidString(m.Reasoning) &&
		utf8.ValidString(m.ReasoningState)
	for _, p := range m.Content {
		ok = ok && utf8.ValidString(p.Text) && utf8.ValidString(p.URL) && utf8.ValidString(p.MimeType) && utf8.ValidString(p.Name)
	}
	for _, c := range m.ToolCalls {
		ok = ok && utf8.ValidString(c.ID) && utf8.ValidString(c.Name) && utf8.ValidString(c.Arguments)
	}
	return ok
}

func fixUTF8(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
