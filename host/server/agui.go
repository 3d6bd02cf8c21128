package server

import (
	"encoding/json"
)

// The AG-UI wire types this server speaks (protocol 1.0, as @ag-ui/core 1.0.0 defines and
// validates them). Field names are the protocol's, exactly; optional fields are omitted
// when empty.

// AG-UI event type names.
const (
	aguiRunStarted              = "RUN_STARTED"
	aguiRunFinished             = "RUN_FINISHED"
	aguiRunError                = "RUN_ERROR"
	aguiTextMessageStart        = "TEXT_MESSAGE_START"
	aguiTextMessageContent      = "TEXT_MESSAGE_CONTENT"
	aguiTextMessageEnd          = "TEXT_MESSAGE_END"
	aguiReasoningStart          = "REASONING_START"
	aguiReasoningMessageStart   = "REASONING_MESSAGE_START"
	aguiReasoningMessageContent = "REASONING_MESSAGE_CONTENT"
	aguiReasoningMessageEnd     = "REASONING_MESSAGE_END"
	aguiReasoningEnd            = "REASONING_END"
	aguiToolCallStart           = "TOOL_CALL_START"
	aguiToolCallArgs            = "TOOL_CALL_ARGS"
	aguiToolCallEnd             = "TOOL_CALL_END"
	aguiToolCallResult          = "TOOL_CALL_RESULT"
	aguiStepStarted             = "STEP_STARTED"
	aguiStepFinished            = "STEP_FINISHED"
	aguiCustom                  = "CUSTOM"
	aguiMessagesSnapshot        = "MESSAGES_SNAPSHOT"
	aguiStateSnapshot           = "STATE_SNAPSHOT"
)

// AGUIEvent is one AG-UI event: a JSON object with a "type" and the fields of that type.
type AGUIEvent interface{ EventType() string }

// base carries the fields every event has.
type base struct {
	Type      string `json:"type"`
	Timestamp int64  `json:"timestamp,omitempty"` // milliseconds since the Unix epoch
}

func (b base) EventType() string { return b.Type }

type (
	RunStarted struct {
		base
		ThreadID string `json:"threadId"`
		RunID    string `json:"runId"`
	}
	RunFinished struct {
		base
		ThreadID string       `json:"threadId"`
		RunID    string       `json:"runId"`
		Result   *RunResult   `json:"result,omitempty"`
		Outcome  *Outcome     `json:"outcome,omitempty"`
		Usage    []TokenUsage `json:"usage,omitempty"`
	}
	RunError struct {
		base
		Message string       `json:"message"`
		Code    string       `json:"code,omitempty"`
		Usage   []TokenUsage `json:"usage,omitempty"`
	}
	// MessageStart is TEXT_MESSAGE_START (role assistant) and REASONING_MESSAGE_START
	// (role reasoning).
	MessageStart struct {
		base
		MessageID string `json:"messageId"`
		Role      string `json:"role"`
	}
	// MessageContent is TEXT_MESSAGE_CONTENT and REASONING_MESSAGE_CONTENT.
	MessageContent struct {
		base
		MessageID string `json:"messageId"`
		Delta     string `json:"delta"`
	}
	// MessageRef is TEXT_MESSAGE_END, REASONING_START, REASONING_MESSAGE_END and
	// REASONING_END.
	MessageRef struct {
		base
		MessageID string `json:"messageId"`
	}
	ToolCallStart struct {
		base
		ToolCallID      string `json:"toolCallId"`
		ToolCallName    string `json:"toolCallName"`
		ParentMessageID string `json:"parentMessageId,omitempty"`
	}
	ToolCallArgs struct {
		base
		ToolCallID string `json:"toolCallId"`
		Delta      string `json:"delta"`
	}
	ToolCallEnd struct {
		base
		ToolCallID string `json:"toolCallId"`
	}
	ToolCallResult struct {
		base
		MessageID  string         `json:"messageId"`
		ToolCallID string         `json:"toolCallId"`
		Content    string         `json:"content"`
		Role       string         `json:"role"`
		Metadata   map[string]any `json:"metadata,omitempty"`
	}
	// Step is STEP_STARTED and STEP_FINISHED.
	Step struct {
		base
		StepName string `json:"stepName"`
	}
	Custom struct {
		base
		Name  string `json:"name"`
		Value any    `json:"value"`
	}
	// MessagesSnapshot is the thread's whole conversation, sent after RUN_STARTED when a
	// run continues a thread (snapshot.go).
	MessagesSnapshot struct {
		base
		Messages []Message `json:"messages"`
	}
	// StateSnapshot is the client state after a context strategy changed it.
	StateSnapshot struct {
		base
		Snapshot json.RawMessage `json:"snapshot"`
	}
)

// Message is an AG-UI message of a MESSAGES_SNAPSHOT: user, assistant or tool.
type Message struct {
	ID         string            `json:"id"`
	Role       string            `json:"role"`
	Content    any               `json:"content,omitempty"` // a string, or AG-UI parts
	ToolCalls  []MessageToolCall `json:"toolCalls,omitempty"`
	ToolCallID string            `json:"toolCallId,omitempty"`
}

// MessageToolCall is a tool call of an assistant Message.
type MessageToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"` // "function"
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// RunResult is RUN_FINISHED.result: how the loop ended the run and its final answer.
type RunResult struct {
	Status string          `json:"status"`
	Reason string          `json:"reason"`
	Text   string          `json:"text,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
}

// Outcome is RUN_FINISHED.outcome: success, interrupt (approvals) or cancelled (abort).
type Outcome struct {
	Type       string      `json:"type"`
	Interrupts []Interrupt `json:"interrupts,omitempty"`
}

// Interrupt asks for an approval. Its id is the tool call's id; a resume entry answers it.
type Interrupt struct {
	ID         string         `json:"id"`
	Reason     string         `json:"reason"`
	Message    string         `json:"message,omitempty"`
	ToolCallID string         `json:"toolCallId,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// TokenUsage is one entry of RUN_FINISHED.usage.
type TokenUsage struct {
	Model        string `json:"model,omitempty"`
	InputTokens  int    `json:"inputTokens"`
	OutputTokens int    `json:"outputTokens"`
	TotalTokens  int    `json:"totalTokens"`
}

// RunAgentInput is the body of POST /v1/runs.
type RunAgentInput struct {
	ThreadID string         `json:"threadId"`
	RunID    string         `json:"runId"`
	Messages []InputMessage `json:"messages"`
	Resume   []ResumeEntry  `json:"resume,omitempty"`
	// State is the client's state, any JSON value: handed to the context strategies,
	// which may replace it (STATE_SNAPSHOT).
	State json.RawMessage `json:"state,omitempty"`
	// Context is what the client says about its situation: handed to the context
	// strategies; the built-in one puts it in the system message.
	Context []ContextItem `json:"context,omitempty"`
	// Tools are the client's own tools (AG-UI frontend tools): offered to the model, run
	// by the client. A call of one ends the run (RUN_FINISHED, status interrupted, reason
	// client_tool_call) after its TOOL_CALL events; the next run carries the result as a
	// "tool" message with the call's toolCallId.
	Tools []ClientTool `json:"tools,omitempty"`
	// ForwardedProps carries the run's controls (RunControls); other keys are ignored.
	ForwardedProps json.RawMessage `json:"forwardedProps,omitempty"`
}

// ContextItem is one entry of RunAgentInput.context.
type ContextItem struct {
	Description string `json:"description"`
	Value       string `json:"value"`
}

// ClientTool is an AG-UI tool: name, description and a JSON Schema of its parameters.
type ClientTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// RunControls are the per-run controls a client sends in forwardedProps, as the CLI's
// run flags: README.md ("Commands in detail") and host/server/README.md.
type RunControls struct {
	OutputSchema  json.RawMessage   `json:"outputSchema,omitempty"`  // a JSON Schema object the final answer must match
	Tools         *[]string         `json:"tools,omitempty"`         // the only tools offered ([] offers none)
	ToolChoice    string            `json:"toolChoice,omitempty"`    // first model call: auto | none | required | a tool's name
	MaxIterations int               `json:"maxIterations,omitempty"` // model calls before the summary
	System        string            `json:"system,omitempty"`        // replaces the system prompt for this run
	Metadata      map[string]string `json:"metadata,omitempty"`      // passed to the provider
	Agent         string            `json:"agent,omitempty"`         // the agent that starts the run (default: the entry agent)
	User          string            `json:"user,omitempty"`          // who the run is for (memory is per user); the client's word
}

// InputMessage is an AG-UI message; content is a string or a list of parts.
type InputMessage struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
}

// ResumeEntry answers an interrupt: status "resolved" with payload {"approved": bool,
// "reason": "..."} (or a bare boolean), or "cancelled", which rejects the call.
type ResumeEntry struct {
	InterruptID string          `json:"interruptId"`
	Status      string          `json:"status"`
	Payload     json.RawMessage `json:"payload,omitempty"`
}
