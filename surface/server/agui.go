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

// aguiEvent is one AG-UI event: a JSON object with a "type" and the fields of that type.
type aguiEvent interface{ EventType() string }

// base carries the fields every event has.
type base struct {
	Type      string `json:"type"`
	Timestamp int64  `json:"timestamp,omitempty"` // milliseconds since the Unix epoch
}

func (b base) EventType() string { return b.Type }

type (
	runStarted struct {
		base
		ThreadID string `json:"threadId"`
		RunID    string `json:"runId"`
	}
	runFinished struct {
		base
		ThreadID string       `json:"threadId"`
		RunID    string       `json:"runId"`
		Result   *runResult   `json:"result,omitempty"`
		Outcome  *outcome     `json:"outcome,omitempty"`
		Usage    []tokenUsage `json:"usage,omitempty"`
	}
	runError struct {
		base
		Message string       `json:"message"`
		Code    string       `json:"code,omitempty"`
		Usage   []tokenUsage `json:"usage,omitempty"`
	}
	// messageStart is TEXT_MESSAGE_START (role assistant) and REASONING_MESSAGE_START
	// (role reasoning).
	messageStart struct {
		base
		MessageID string `json:"messageId"`
		Role      string `json:"role"`
	}
	// messageContent is TEXT_MESSAGE_CONTENT and REASONING_MESSAGE_CONTENT.
	messageContent struct {
		base
		MessageID string `json:"messageId"`
		Delta     string `json:"delta"`
	}
	// messageRef is TEXT_MESSAGE_END, REASONING_START, REASONING_MESSAGE_END and
	// REASONING_END.
	messageRef struct {
		base
		MessageID string `json:"messageId"`
	}
	toolCallStart struct {
		base
		ToolCallID      string `json:"toolCallId"`
		ToolCallName    string `json:"toolCallName"`
		ParentMessageID string `json:"parentMessageId,omitempty"`
	}
	toolCallArgs struct {
		base
		ToolCallID string `json:"toolCallId"`
		Delta      string `json:"delta"`
	}
	toolCallEnd struct {
		base
		ToolCallID string `json:"toolCallId"`
	}
	toolCallResult struct {
		base
		MessageID  string         `json:"messageId"`
		ToolCallID string         `json:"toolCallId"`
		Content    string         `json:"content"`
		Role       string         `json:"role"`
		Metadata   map[string]any `json:"metadata,omitempty"`
	}
	// aguiStep is STEP_STARTED and STEP_FINISHED.
	aguiStep struct {
		base
		StepName string `json:"stepName"`
	}
	custom struct {
		base
		Name  string `json:"name"`
		Value any    `json:"value"`
	}
	// messagesSnapshot is the thread's whole conversation, sent after RUN_STARTED when a
	// run continues a thread (snapshot.go).
	messagesSnapshot struct {
		base
		Messages []message `json:"messages"`
	}
	// stateSnapshot is the client state after a context strategy changed it.
	stateSnapshot struct {
		base
		Snapshot json.RawMessage `json:"snapshot"`
	}
)

// message is an AG-UI message of a MESSAGES_SNAPSHOT: user, assistant or tool.
type message struct {
	ID         string            `json:"id"`
	Role       string            `json:"role"`
	Content    any               `json:"content,omitempty"` // a string, or AG-UI parts
	ToolCalls  []messageToolCall `json:"toolCalls,omitempty"`
	ToolCallID string            `json:"toolCallId,omitempty"`
}

// messageToolCall is a tool call of an assistant Message.
type messageToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"` // "function"
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// runResult is RUN_FINISHED.result: how the loop ended the run and its final answer.
type runResult struct {
	Status string          `json:"status"`
	Reason string          `json:"reason"`
	Text   string          `json:"text,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
}

// outcome is RUN_FINISHED.outcome: success, interrupt (approvals) or cancelled (abort).
type outcome struct {
	Type       string      `json:"type"`
	Interrupts []interrupt `json:"interrupts,omitempty"`
}

// interrupt asks for an approval. Its id is the tool call's id; a resume entry answers it.
type interrupt struct {
	ID         string         `json:"id"`
	Reason     string         `json:"reason"`
	Message    string         `json:"message,omitempty"`
	ToolCallID string         `json:"toolCallId,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// tokenUsage is one entry of RUN_FINISHED.usage.
type tokenUsage struct {
	Model        string `json:"model,omitempty"`
	InputTokens  int    `json:"inputTokens"`
	OutputTokens int    `json:"outputTokens"`
	TotalTokens  int    `json:"totalTokens"`
}

// RunAgentInput is the body of POST /v1/runs.
type RunAgentInput struct {
	ThreadID string         `json:"threadId"`
	RunID    string         `json:"runId"`
	Messages []inputMessage `json:"messages"`
	Resume   []resumeEntry  `json:"resume,omitempty"`
	// State is the client's state, any JSON value: handed to the context strategies,
	// which may replace it (STATE_SNAPSHOT).
	State json.RawMessage `json:"state,omitempty"`
	// Context is what the client says about its situation: handed to the context
	// strategies; the built-in one puts it in the system message.
	Context []contextItem `json:"context,omitempty"`
	// Tools are the client's own tools (AG-UI frontend tools): offered to the model, run
	// by the client. A call of one ends the run (RUN_FINISHED, status interrupted, reason
	// client_tool_call) after its TOOL_CALL events; the next run carries the result as a
	// "tool" message with the call's toolCallId.
	Tools []clientTool `json:"tools,omitempty"`
	// ForwardedProps carries the run's controls (RunControls); other keys are ignored.
	ForwardedProps json.RawMessage `json:"forwardedProps,omitempty"`
}

// contextItem is one entry of RunAgentInput.context.
type contextItem struct {
	Description string `json:"description"`
	Value       string `json:"value"`
}

// clientTool is an AG-UI tool: name, description and a JSON Schema of its parameters.
type clientTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// runControls are the per-run controls a client sends in forwardedProps, as the CLI's
// run flags: README.md ("Commands in detail") and surface/server/README.md.
type runControls struct {
	OutputSchema  json.RawMessage   `json:"outputSchema,omitempty"`  // a JSON Schema object the final answer must match
	Tools         *[]string         `json:"tools,omitempty"`         // the only tools offered ([] offers none)
	ToolChoice    string            `json:"toolChoice,omitempty"`    // first model call: auto | none | required | a tool's name
	NoTools       bool              `json:"noTools,omitempty"`       // tools off for the run: none offered, every call refused
	MaxIterations int               `json:"maxIterations,omitempty"` // model calls before the summary
	System        string            `json:"system,omitempty"`        // replaces the system prompt for this run
	Metadata      map[string]string `json:"metadata,omitempty"`      // passed to the provider
	Agent         string            `json:"agent,omitempty"`         // the agent that starts the run (default: the entry agent)
	User          string            `json:"user,omitempty"`          // who the run is for (memory is per user); the client's word
	// RuntimeInit is init data for the tool runtimes the run prepares, by runtime name,
	// and Hints the run's runtime hints (loop.RunInput; docs/loop.md, "Tool runtimes").
	RuntimeInit map[string]json.RawMessage `json:"runtimeInit,omitempty"`
	Hints       map[string]string          `json:"hints,omitempty"`
}

// inputMessage is an AG-UI message; content is a string or a list of parts.
type inputMessage struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
}

// resumeEntry answers an interrupt: status "resolved" with payload {"approved": bool,
// "reason": "..."} (or a bare boolean), or "cancelled", which rejects the call.
type resumeEntry struct {
	InterruptID string          `json:"interruptId"`
	Status      string          `json:"status"`
	Payload     json.RawMessage `json:"payload,omitempty"`
}
