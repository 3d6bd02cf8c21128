package scripted

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/agenthost/agenthost/providers"
)

// Fixture is a scripted conversation: the answers to successive model calls.
type Fixture struct {
	Turns []Turn `json:"turns"`
	// Repeat starts again from the first turn after the last one, instead of
	// failing; for load tests and benchmarks.
	Repeat bool `json:"repeat,omitempty"`
	// PerSession counts turns per session (the request's metadata.session), so
	// concurrent runs on different sessions each play the fixture from its first
	// turn, as a real model answers each conversation on its own. nil is true:
	// "per_session": false makes one sequence of every call of the process, for
	// fixtures that script successive sessions (or a plugin's create_message
	// calls, which carry no session) as the next turns of one story.
	PerSession *bool `json:"per_session,omitempty"`
	// Stories are conversations of their own, for fixtures that serve many different
	// sessions (an eval dataset's cases): a session plays the first story whose When is
	// part of its first user message, and Turns is not used. Needs per_session.
	Stories []Story `json:"stories,omitempty"`
	// Synonyms maps words to the word Embed takes them for ("apartment": "flat"), so a
	// test can have two texts near in meaning that share no word (embed.go).
	Synonyms map[string]string `json:"synonyms,omitempty"`
}

// Story is the turns a session plays when its first user message contains When.
type Story struct {
	When  string `json:"when"`
	Turns []Turn `json:"turns"`
}

// perSession reports whether turns are counted per session (the default).
func (f *Fixture) perSession() bool { return f.PerSession == nil || *f.PerSession }

// Turn is the answer to one model call.
type Turn struct {
	Expect     *Expect    `json:"expect,omitempty"`
	Reasoning  string     `json:"reasoning,omitempty"`
	Text       string     `json:"text,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	Usage      *Usage     `json:"usage,omitempty"`
	StopReason string     `json:"stop_reason,omitempty"` // default: tool_use with tool calls, else end_turn
	// Chunk splits text and reasoning into deltas of this many characters
	// (runes); 0 sends each whole.
	Chunk int `json:"chunk,omitempty"`
	// ArgsChunk splits each tool call's arguments into deltas of this many runes, as
	// models stream them (the first carries the call's id and name); 0 sends each whole.
	ArgsChunk int `json:"args_chunk,omitempty"`
	// DelayMs waits before the first event, like a model's time to first
	// token; ChunkDelayMs waits before every later event, like its token rate.
	DelayMs      int        `json:"delay_ms,omitempty"`
	ChunkDelayMs int        `json:"chunk_delay_ms,omitempty"`
	Error        *TurnError `json:"error,omitempty"`
}

// Expect is checked against the request before the turn is played.
type Expect struct {
	LastRole     string `json:"last_role,omitempty"`     // role of the request's last message
	ToolsOffered *bool  `json:"tools_offered,omitempty"` // whether the request offers any tool
	Contains     string `json:"contains,omitempty"`      // substring of the last user message's text
	// Messages is the exact number of messages the request carries (system prompt
	// included): how a test sees what a context strategy left of the history.
	Messages *int `json:"messages,omitempty"`
	// System is the exact text of the request's system message ("" = not checked).
	System string `json:"system,omitempty"`
	// SystemContains and SystemLacks are a substring the system message must have, and
	// one it must not: how a test sees what a context strategy added (recalled memory).
	SystemContains string `json:"system_contains,omitempty"`
	SystemLacks    string `json:"system_lacks,omitempty"`
	// Tools are the exact names of the tools the request offers, in order (nil = not
	// checked; [] = none).
	Tools []string `json:"tools,omitempty"`
}

// ToolCall is one call the scripted model makes.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Usage is reported after the content; TotalTokens defaults to the sum.
type Usage struct {
	PromptTokens     int64   `json:"prompt_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	TotalTokens      int64   `json:"total_tokens,omitempty"`
	CostUSD          float64 `json:"cost_usd,omitempty"`
}

// TurnError makes the call fail with a typed provider error.
type TurnError struct {
	Kind         string `json:"kind"`
	Message      string `json:"message,omitempty"`
	RetryAfterMs int64  `json:"retry_after_ms,omitempty"`
	// Retryable defaults to providers.DefaultRetryable(kind).
	Retryable *bool `json:"retryable,omitempty"`
	// Status is the HTTP status the error plays as the API's answer (0: none).
	Status int `json:"status,omitempty"`
}

// Load reads and validates a fixture file.
func Load(path string) (*Fixture, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scripted: %w", err)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("scripted: fixture %s: %w", path, err)
	}
	return f, nil
}

// Parse decodes a fixture strictly: unknown keys and trailing data are
// errors, so a typo in a fixture fails loudly instead of being ignored.
func Parse(data []byte) (*Fixture, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f Fixture
	if err := dec.Decode(&f); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the fixture object")
	}
	for i, t := range f.Turns {
		if err := t.validate(); err != nil {
			return nil, fmt.Errorf("turn %d: %w", i+1, err)
		}
	}
	if len(f.Stories) > 0 && !f.perSession() {
		return nil, fmt.Errorf("stories need per_session")
	}
	for i, st := range f.Stories {
		if st.When == "" {
			return nil, fmt.Errorf("story %d: when is empty", i+1)
		}
		for j, t := range st.Turns {
			if err := t.validate(); err != nil {
				return nil, fmt.Errorf("story %d (%q): turn %d: %w", i+1, st.When, j+1, err)
			}
		}
	}
	return &f, nil
}

func (t *Turn) validate() error {
	if t.Chunk < 0 || t.ArgsChunk < 0 || t.DelayMs < 0 || t.ChunkDelayMs < 0 {
		return fmt.Errorf("chunk, args_chunk, delay_ms and chunk_delay_ms must not be negative")
	}
	if t.Error != nil {
		if !providers.KnownKind(t.Error.Kind) {
			return fmt.Errorf("error.kind %q is not one of rate_limit, overloaded, context_overflow, auth, invalid_request, provider", t.Error.Kind)
		}
		if t.Text != "" || t.Reasoning != "" || len(t.ToolCalls) > 0 {
			return fmt.Errorf("a turn with error has no text, reasoning or tool_calls")
		}
	}
	for j, c := range t.ToolCalls {
		if c.ID == "" || c.Name == "" {
			return fmt.Errorf("tool_calls[%d]: id and name are required", j)
		}
	}
	return nil
}
