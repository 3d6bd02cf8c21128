package sdk

import "encoding/json"

// The JSON shapes of the ABIs (ABI.md). They mirror the host's loop and
// sandbox types field for field; the tests in plugins/ check both sides agree.

// Message is one conversation entry.
type Message struct {
	Role       string     `json:"role"` // system | user | assistant | tool
	Content    []Part     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
	Reasoning  string     `json:"reasoning,omitempty"`
	// ReasoningState is the provider's opaque record of the reasoning (a signature, an
	// encrypted item); a plugin that rewrites messages must pass it through unchanged,
	// or the provider cannot continue the reasoning.
	ReasoningState string `json:"reasoning_state,omitempty"`
}

// Part is one piece of a message's content: text, or an image by URL.
type Part struct {
	Type     string `json:"type"` // text | image | audio | file
	Text     string `json:"text,omitempty"`
	URL      string `json:"url,omitempty"`
	MimeType string `json:"mime_type,omitempty"`
	// Attachment is the hex sha256 of a media part's bytes, stored in the session; a
	// context plugin sees media by this reference, with Name and Size, not by its bytes.
	Attachment string `json:"attachment,omitempty"`
	Name       string `json:"name,omitempty"`
	Size       int64  `json:"size,omitempty"`
	// Data is a media part's bytes where they travel with the part; stored messages
	// hold the reference only, so a context plugin normally sees Data empty.
	Data []byte `json:"data,omitempty"`
}

// ToolCall is a call the model asked for; Arguments is the raw JSON string.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Text joins the message's text parts.
func (m Message) Text() string {
	var s string
	for _, p := range m.Content {
		s += p.Text
	}
	return s
}

// TextMessage builds a message holding one text part.
func TextMessage(role, text string) Message {
	return Message{Role: role, Content: []Part{{Type: "text", Text: text}}}
}

// Usage counts tokens and money for the run so far.
type Usage struct {
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	TotalTokens      int     `json:"total_tokens"`
	CostUSD          float64 `json:"cost_usd"`
	CacheReadTokens  int     `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int     `json:"cache_write_tokens,omitempty"`
	Provider         string  `json:"provider,omitempty"` // the provider that answered (a fallback chain's link)
}

// ContextInput is the input of context_build.
type ContextInput struct {
	History  []Message `json:"history"`
	Messages []Message `json:"messages"`
	Budget   int       `json:"budget"`
	Overflow bool      `json:"overflow"`
	// State and Context are the client's (AG-UI state and context), when it sent them.
	State   json.RawMessage `json:"state,omitempty"`
	Context []ContextItem   `json:"context,omitempty"`
}

// ContextItem is one piece of client context.
type ContextItem struct {
	Description string `json:"description"`
	Value       string `json:"value"`
}

// ContextOutput is the output of context_build; nil Messages keeps the input's. State,
// when set, replaces the client's state (the client gets a STATE_SNAPSHOT).
type ContextOutput struct {
	Messages []Message       `json:"messages,omitempty"`
	Compact  *Compaction     `json:"compact,omitempty"`
	State    json.RawMessage `json:"state,omitempty"`
}

// Compaction replaces the first Replace history messages with Summary, for good.
type Compaction struct {
	Replace int       `json:"replace"`
	Summary []Message `json:"summary"`
}

// StepInput is the input of on_step.
type StepInput struct {
	Iteration int       `json:"iteration"`
	Message   Message   `json:"message"`
	Usage     Usage     `json:"usage"`
	ToolCalls int       `json:"tool_calls_so_far"`
	History   []Message `json:"history"`
}

// FinalInput is the input of before_final.
type FinalInput struct {
	Iteration     int       `json:"iteration"`
	Text          string    `json:"text"`
	Continuations int       `json:"continuations"`
	Usage         Usage     `json:"usage"`
	History       []Message `json:"history"`
}

// Verdicts of termination hooks.
const (
	Proceed  = ""         // no objection
	Stop     = "stop"     // on_step: end the run now
	Continue = "continue" // before_final: refuse the final, inject Message
)

// Decision is the output of on_step and before_final.
type Decision struct {
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Guard stages and actions.
const (
	StageInput      = "input"
	StageOutput     = "output"
	StageToolArgs   = "tool_args"
	StageToolResult = "tool_result"

	Allow  = "allow"
	Block  = "block"
	Redact = "redact"
)

// GuardInput is the input of guard; Tool is set for the tool stages. Media describes
// the image, audio and file parts beside the text (stages input and tool_result), never
// their bytes.
type GuardInput struct {
	Stage   string      `json:"stage"`
	Content string      `json:"content"`
	Tool    string      `json:"tool,omitempty"`
	Media   []MediaInfo `json:"media,omitempty"`
}

// MediaInfo is one media part as a guardrail sees it: Type "image", "audio" or "file",
// the MIME type the host sniffed from the bytes, the size in bytes (0 for an image by
// URL), and the name or URL it came with.
type MediaInfo struct {
	Type     string `json:"type"`
	MimeType string `json:"mime_type,omitempty"`
	Size     int64  `json:"size"`
	Name     string `json:"name,omitempty"`
	URL      string `json:"url,omitempty"`
}

// GuardResult is the output of guard; Content replaces the input on redact.
type GuardResult struct {
	Action  string `json:"action"`
	Reason  string `json:"reason,omitempty"`
	Content string `json:"content,omitempty"`
}

// Permission decisions (kind "permission", export permit).
const (
	PermitAllow = "allow"
	PermitDeny  = "deny"
	PermitAsk   = "ask"
)

// PermitInput is the input of permit: one tool call the model asked for, before it
// runs. Arguments is the call's JSON arguments, or {"_raw": "..."} when the model sent
// something that is not JSON.
type PermitInput struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	CallID    string          `json:"call_id"`
	SessionID string          `json:"session_id"`
	RunID     string          `json:"run_id"`
}

// PermitResult is the output of permit: Decision is allow, deny (the model gets an
// error tool message with Reason) or ask (a human approves or rejects the call).
type PermitResult struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
}

// ToolSpec describes a tool (mcp describe / list_tools).
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// CallToolResult is the MCP result of a tool call. StructuredContent is the
// tool's output as JSON, for a caller that reads data rather than text; Meta
// is MCP's _meta, where MetaFinal ends the run (see Final and ABI.md).
type CallToolResult struct {
	Content           []Content       `json:"content"`
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	Meta              map[string]any  `json:"_meta,omitempty"`
}

// MetaFinal is the _meta key of a result that ends the run: its text (and
// structuredContent) is the run's final answer, like a Go done tool.
const MetaFinal = "agenthost/final"

// Final is a successful result that ends the run with text as the final
// answer and structured (JSON, may be nil) as its structured output.
func Final(text string, structured json.RawMessage) CallToolResult {
	return CallToolResult{Content: []Content{{Type: "text", Text: text}}, StructuredContent: structured,
		Meta: map[string]any{MetaFinal: true}}
}

// Content is one MCP content block.
type Content struct {
	Type     string `json:"type"` // text | image | audio | resource
	Text     string `json:"text,omitempty"`
	Data     string `json:"data,omitempty"` // base64
	MimeType string `json:"mimeType,omitempty"`
	// Resource is an embedded resource's contents (type "resource"):
	// {"uri","mimeType","text"} or {"uri","mimeType","blob"}.
	Resource json.RawMessage `json:"resource,omitempty"`
}

// Text is a successful result holding one text block.
func Text(s string) CallToolResult {
	return CallToolResult{Content: []Content{{Type: "text", Text: s}}}
}

// ErrorText is an error result (isError) holding one text block.
func ErrorText(s string) CallToolResult {
	return CallToolResult{Content: []Content{{Type: "text", Text: s}}, IsError: true}
}

// SamplingMessage is one message of an MCP sampling request or result.
type SamplingMessage struct {
	Role    string  `json:"role"` // user | assistant
	Content Content `json:"content"`
}

// CreateMessageRequest is the MCP CreateMessageRequestParam (create_message).
type CreateMessageRequest struct {
	Messages     []SamplingMessage `json:"messages"`
	SystemPrompt string            `json:"systemPrompt,omitempty"`
	MaxTokens    int               `json:"maxTokens"`
	Temperature  *float64          `json:"temperature,omitempty"`
}

// CreateMessageResult is the MCP CreateMessageResult.
type CreateMessageResult struct {
	Role       string  `json:"role"`
	Content    Content `json:"content"`
	Model      string  `json:"model,omitempty"`
	StopReason string  `json:"stopReason,omitempty"`
}

// Plan is the output of plan (kind "planner"): a goal and its steps.
type Plan struct {
	Goal  string     `json:"goal"`
	Steps []PlanStep `json:"steps"`
	// Parameters are values steps use as ${params.NAME} in their arguments.
	Parameters map[string]any `json:"parameters,omitempty"`
}

// PlanStep is one step: a tool call when Tool is set, else work described for a
// bounded assistant run.
type PlanStep struct {
	ID              string          `json:"id"`
	Description     string          `json:"description"`
	Tool            string          `json:"tool,omitempty"`
	Arguments       json.RawMessage `json:"arguments,omitempty"`
	ExpectedOutcome string          `json:"expected_outcome"`
	Timeout         string          `json:"timeout,omitempty"`
	// DependsOn names steps that must end ok first; in a plan where some step has
	// dependencies, steps that do not wait for each other may run at the same time.
	DependsOn []string `json:"depends_on,omitempty"`
}

// StepOutcome is what was recorded of a step.
type StepOutcome struct {
	ID         string `json:"id"`
	Status     string `json:"status"` // ok | error | skipped
	Outcome    string `json:"outcome,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// PlanInput is the input of plan: the goal, the tools a step may name, and for a
// replan (Revision > 1) the plan before, its outcomes and the evaluator's feedback.
type PlanInput struct {
	Goal     string        `json:"goal"`
	Tools    []ToolSpec    `json:"tools"`
	Revision int           `json:"revision"`
	Previous *Plan         `json:"previous,omitempty"`
	Outcomes []StepOutcome `json:"outcomes,omitempty"`
	Feedback string        `json:"feedback,omitempty"`
}

// EvalInput is the input of evaluate (kind "evaluator").
type EvalInput struct {
	Goal     string        `json:"goal"`
	Revision int           `json:"revision"`
	Plan     Plan          `json:"plan"`
	Outcomes []StepOutcome `json:"outcomes"`
}

// Evaluation is the output of evaluate: verdict continue | done | replan | fail.
type Evaluation struct {
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
	Answer  string `json:"answer,omitempty"`
}

// GradeInput is the input of grade (kind "evaluator"): an eval case's run.
type GradeInput struct {
	Case   string            `json:"case"`
	Prompt string            `json:"prompt"`
	Final  string            `json:"final"`
	Output json.RawMessage   `json:"output,omitempty"`
	Calls  []GradeCall       `json:"calls"`
	Status string            `json:"status"`
	Reason string            `json:"reason"`
	Config map[string]string `json:"config,omitempty"` // the case's grader config
}

// GradeCall is a tool call the run made.
type GradeCall struct {
	Name string         `json:"name"`
	Args map[string]any `json:"args,omitempty"`
}

// Grade is the output of grade: pass, a score on the grader's scale, and why.
type Grade struct {
	Pass   bool    `json:"pass"`
	Score  float64 `json:"score"`
	Reason string  `json:"reason"`
}

// ExtractInput is the input of extract (kind "memory"): a finished run of a user, its
// messages (the user's, the model's answers, tool results) and what the user's memory
// already holds that is like them, so the extractor need not repeat it.
type ExtractInput struct {
	User     string        `json:"user"`
	Agent    string        `json:"agent"`
	Session  string        `json:"session"`
	Run      string        `json:"run"`
	Status   string        `json:"status"`
	Messages []Message     `json:"messages"`
	Known    []MemoryEntry `json:"known,omitempty"`
}

// ExtractOutput is what to remember: at most 20 memories of the run's user, each a fact
// (recalled when it matches) or a preference (given on every run).
type ExtractOutput struct {
	Memories []NewMemory `json:"memories"`
}

// NewMemory is a memory to add: Kind "fact" (default) or "preference".
type NewMemory struct {
	Text     string            `json:"text"`
	Kind     string            `json:"kind,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// MemoryEntry is a stored memory as a plugin sees it.
type MemoryEntry struct {
	ID      string  `json:"id"`
	Kind    string  `json:"kind"`
	Text    string  `json:"text"`
	Created string  `json:"created"` // RFC 3339
	Score   float64 `json:"score,omitempty"`
}

// RankInput is the input of rank (kind "memory"): the user's latest message and the
// memories the search found for it, best first by the search's own rank.
type RankInput struct {
	User       string        `json:"user"`
	Agent      string        `json:"agent"`
	Query      string        `json:"query"`
	Limit      int           `json:"limit"`
	Candidates []MemoryEntry `json:"candidates"`
}

// RankOutput is the ids of the candidates to give the model, best first; ids that are
// not candidates are ignored (a ranker chooses among what the user may see, it cannot
// add to it), and at most Limit are used.
type RankOutput struct {
	IDs []string `json:"ids"`
}
