package loop

import (
	"context"
	"encoding/json"
	"time"
)

// ContextStrategy shapes what the model receives (rule L11). Strategies run as a chain:
// each gets the session history and the previous strategy's messages. On a
// context_overflow error the chain runs again with Overflow set and may propose a
// Compaction, which the loop persists so later builds start from it. Build must be
// deterministic for the same input.
type ContextStrategy interface {
	Name() string
	Build(ctx context.Context, in ContextInput) (ContextOutput, error)
}

// ContextInput is what a strategy sees. History is the session's conversation after the
// system prompt, with earlier compactions applied; Messages is the model input built so
// far (the system prompt first, when there is one). Both are the run's own arrays,
// shared, not copies: a strategy returns a new slice (appending to one is safe, its
// capacity ends at its length) and never writes into them.
type ContextInput struct {
	History  []Message `json:"history"`
	Messages []Message `json:"messages"`
	Budget   int       `json:"budget"` // tokens; 0 means no budget
	Overflow bool      `json:"overflow"`
	// State and Context are the client's (RunInput.State, RunInput.ClientContext).
	State   json.RawMessage `json:"state,omitempty"`
	Context []ContextItem   `json:"context,omitempty"`
	// Tools are the tools the model is offered on this call, in the order it sees them
	// (none when tools are off).
	Tools []ToolSpec `json:"tools,omitempty"`
	// Hints are the run's runtime hints (RunInput.RuntimeHints).
	Hints map[string]string `json:"hints,omitempty"`
}

// ContextOutput is a strategy's answer. Compact, when set, replaces the first Replace
// messages of History by Summary, for this and every later build.
type ContextOutput struct {
	Messages []Message   `json:"messages,omitempty"` // nil keeps the input's messages
	Compact  *Compaction `json:"compact,omitempty"`
	// State, when set, replaces the run's client state: the next strategies see it, a
	// state event reports it, and AG-UI clients get a STATE_SNAPSHOT.
	State json.RawMessage `json:"state,omitempty"`
	// Append are messages to add to the session's history, after what it holds: stored
	// like any message of the run (L21), seen by the next strategies and every later
	// build, and part of this call's input. Each must be a user, system or assistant
	// message with content and no tool calls; one that is not is refused with an error
	// event (contextappend.go).
	Append []Message `json:"append,omitempty"`
}

// Compaction replaces the first Replace history messages with Summary.
type Compaction struct {
	Replace int       `json:"replace"`
	Summary []Message `json:"summary"`
}

// Verdict is what a termination hook decides.
type Verdict string

const (
	VerdictProceed  Verdict = ""         // no objection
	VerdictStop     Verdict = "stop"     // end the run now (OnStep)
	VerdictContinue Verdict = "continue" // refuse the final, inject Message (BeforeFinal)
)

// Decision is a termination hook's answer. Message is the user message a continue
// injects, or the final text a stop gives (a stop without it gets the summary call).
type Decision struct {
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason,omitempty"`
	Message string  `json:"message,omitempty"`
}

// StepInfo describes a model response that asked for tools, before they run.
type StepInfo struct {
	Iteration int       `json:"iteration"`
	Message   Message   `json:"message"`
	Usage     Usage     `json:"usage"`
	ToolCalls int       `json:"tool_calls_so_far"`
	History   []Message `json:"history"`
}

// FinalInfo describes a final answer about to be accepted.
type FinalInfo struct {
	Iteration     int       `json:"iteration"`
	Text          string    `json:"text"`
	Continuations int       `json:"continuations"`
	Usage         Usage     `json:"usage"`
	History       []Message `json:"history"`
}

// TerminationHook can stop a run after a step, or send it back to work before its final
// answer is accepted (rules L4 and L12).
type TerminationHook interface {
	Name() string
	OnStep(ctx context.Context, info StepInfo) (Decision, error)
	BeforeFinal(ctx context.Context, info FinalInfo) (Decision, error)
}

// Stage is where a guardrail looks.
type Stage string

const (
	StageInput      Stage = "input"
	StageOutput     Stage = "output"
	StageToolArgs   Stage = "tool_args"
	StageToolResult Stage = "tool_result"
)

// GuardAction is a guardrail's verdict.
type GuardAction string

const (
	GuardAllow  GuardAction = "allow"
	GuardBlock  GuardAction = "block"
	GuardRedact GuardAction = "redact"
)

// GuardInput is the content a guardrail checks. Tool is set for tool stages. Media
// describes the image, audio and file parts beside the text (input and tool_result):
// what they are, never their bytes (guardmedia.go).
type GuardInput struct {
	Stage   Stage       `json:"stage"`
	Content string      `json:"content"`
	Tool    string      `json:"tool,omitempty"`
	Media   []MediaInfo `json:"media,omitempty"`
}

// MediaInfo is what a guardrail sees of a media part: its type (image, audio, file),
// its sniffed MIME type, its size in bytes (0 for an image by URL), and the name or URL
// it came with.
type MediaInfo struct {
	Type     PartType `json:"type"`
	MimeType string   `json:"mime_type,omitempty"`
	Size     int64    `json:"size"`
	Name     string   `json:"name,omitempty"`
	URL      string   `json:"url,omitempty"`
}

// GuardResult is a guardrail's answer; Content is the replacement for a redact.
type GuardResult struct {
	Action  GuardAction `json:"action"`
	Reason  string      `json:"reason,omitempty"`
	Content string      `json:"content,omitempty"`
}

// Guardrail checks content at the four stages. A blocked input fails the run; a blocked
// tool argument or result becomes an error tool message; a blocked output replaces the
// final text with a notice.
type Guardrail interface {
	Name() string
	Check(ctx context.Context, in GuardInput) (GuardResult, error)
}

// Approval is a human's answer to a tool call that needs approval.
type Approval struct {
	Approved bool
	Reason   string
	// Input is a human's answer to a call's input request (input.go): the fields of
	// the form it asked for, as a JSON object.
	Input json.RawMessage `json:",omitempty"`
	// Scope widens a yes (approvals.go): ScopeOnce ("" too), ScopeSession, or ScopeUser
	// for For; ForRule makes the grant cover the rule that asked instead of the tool.
	Scope   string        `json:",omitempty"`
	ForRule bool          `json:",omitempty"`
	For     time.Duration `json:",omitempty"`
	// By is who answered ("": the run's user). ArgsHash, when set, must be the call's
	// ArgsHash: an answer for other arguments is asked again.
	By       string `json:",omitempty"`
	ArgsHash string `json:",omitempty"`
}

// Approver asks a human (rule L6). It blocks until there is an answer or ctx ends.
type Approver interface {
	Approve(ctx context.Context, call ToolCall) (Approval, error)
}

// PermissionFunc decides, per call, whether a tool call may run (seed 000's
// canExecuteTool; L6): deny becomes an error tool message with the reason, ask routes the
// call to the Approver, allow lets the approval policy decide, and an empty verdict has
// no opinion.
type PermissionFunc func(ctx context.Context, call ToolCall) PermissionDecision

// PermissionDecision is a PermissionFunc's answer.
type PermissionDecision struct {
	Verdict PermissionVerdict
	Reason  string
}

// PermissionVerdict is allow, deny or ask. ApprovalDefault uses the same words.
type PermissionVerdict string

const (
	PermitAllow PermissionVerdict = "allow"
	PermitDeny  PermissionVerdict = "deny"
	PermitAsk   PermissionVerdict = "ask"
)
