package providers

import "github.com/agenthost/agenthost/providers/proto"

// The kinds of a ChatEvent's Event, for a type switch on ev.GetEvent(), re-exported
// like the protocol types so that a caller (the host's model adapter) needs only import
// providers.
type (
	EventText           = providerpb.ChatEvent_Text
	EventReasoning      = providerpb.ChatEvent_Reasoning
	EventToolCall       = providerpb.ChatEvent_ToolCall
	EventUsage          = providerpb.ChatEvent_Usage
	EventReasoningState = providerpb.ChatEvent_ReasoningState
	EventFinish         = providerpb.ChatEvent_Finish
)
