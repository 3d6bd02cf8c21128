package loop

import (
	"encoding/json"
	"time"
)

// RunInput starts or continues a run. An empty SessionID starts a new session; an empty
// RunID gets a generated one. ToolPolicy and Limits fields that are non-zero override the
// agent's for this run.
type RunInput struct {
	SessionID            string
	RunID                string
	Messages             []Message
	SystemPromptOverride string
	AllowedTools         []string // nil = all
	ToolOrder            []string
	ToolPolicy           ToolPolicy
	Limits               Limits
	OutputSchema         json.RawMessage
	Metadata             map[string]string
	// User is who the run is for, as the surface that started it knows them (the CLI's
	// --user, AG-UI's forwardedProps.user, an MCP client's identity); "" is anonymous.
	// The loop records it (run_started) and gives it to every hook, strategy and tool
	// through CallInfo: per-user state (memory) keys on it, never on a tool argument.
	User string
	// Approvals answers approval requests by tool call id, before the Approver is asked:
	// how a run interrupted for approval (StatusInterrupted) is resumed.
	Approvals map[string]Approval
	// ClientTools are tools the caller executes itself (L16): offered to the model, never
	// run by the host. A call of one ends the run interrupted/client_tool_call with the
	// call in RunResult.PendingCalls; the next run supplies its result as a tool message
	// with the call's id.
	ClientTools []ToolSpec
	// ContinueOnMaxTokens is Config.ContinueOnMaxTokens for this run.
	ContinueOnMaxTokens bool
	// ToolChoice overrides Config.ToolChoice for this run's first model call.
	ToolChoice string
	// ToolsOff turns tools off for this run (Config.ToolsOff): none offered, every call
	// refused (toolsoff.go).
	ToolsOff bool
	// TraceID is the run's distributed-trace id, if the host traces it; every event of
	// the run carries it, so a client can find the run's trace.
	TraceID string
	// State is the client's state for this run (AG-UI's state): handed to the context
	// strategies, which may replace it (ContextOutput.State); each change is a state
	// event. nil is no state.
	State json.RawMessage
	// Agent names the Team agent that starts the run ("": this one).
	Agent string
	// forceReact runs a plan-mode agent as a ReAct loop: a plan step's sub-run.
	forceReact bool
	// direct is the one call of a run Agent.DirectCall started (direct.go); approver
	// overrides Config.Approver for it.
	direct        *ToolCall
	approver      Approver
	directTimeout time.Duration
	directResult  *ToolResult
	// sample is the one model call of a run Agent.Sample started (sample.go).
	sample *sampleCall
	// RuntimeInit is init data for the tool runtimes the run prepares, by runtime name
	// (Config.Runtimes; runtime.go); RuntimeHints are hints every tool (CallInfo.Hints)
	// and context strategy (ContextInput.Hints) of the run sees.
	RuntimeInit  map[string]json.RawMessage
	RuntimeHints map[string]string
	// ClientContext is what the client says about its situation (AG-UI's context):
	// handed to the context strategies; DefaultContext puts it in the system message.
	ClientContext []ContextItem
}

// ContextItem is one piece of client context: what it is, and its value.
type ContextItem struct {
	Description string `json:"description"`
	Value       string `json:"value"`
}

// RunResult is how a run ended.
type RunResult struct {
	SessionID string
	RunID     string
	Status    Status
	Reason    Reason
	Final     *Message
	Output    json.RawMessage
	Err       error
	Usage     Usage
	// StopReason is the stop reason of the last model answer (L15).
	StopReason StopReason
	// PendingCalls are the client tool calls the caller must answer (L16).
	PendingCalls []ToolCall
}
