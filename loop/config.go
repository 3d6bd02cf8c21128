package loop

import (
	"time"
)

// Config is everything an Agent is built from. Zero values mean the documented default.
type Config struct {
	Name         string // the "agent" field of every event
	SystemPrompt string // stored once per session, as its first entry (L1)
	// ToolChoice is the first model call's tool choice: "" or "auto", "none", "required"
	// or a tool's name. Later calls of the run are "auto" (RunInput.ToolChoice overrides).
	ToolChoice string
	// ToolsOff turns tools off for every run of the agent ([agent] tools = false): the
	// model is offered none, and a call it makes anyway is refused by the tool pipeline
	// (toolsoff.go). RunInput.ToolsOff does the same for one run.
	ToolsOff  bool
	Model     Model
	ModelName string // passed to the model as Request.Model
	Tools     *ToolSet
	Store     SessionStore // default: a new MemoryStore
	// StoreOutage is how long a run waits for its store when a write fails because the
	// store is unavailable (the error's StoreUnavailable() is true: a database restarting
	// or unreachable), writing again when it answers (rule L23, outage.go). 0: no wait,
	// the run fails with the write's error.
	StoreOutage time.Duration
	// Scrub, when set, is applied to every entry a run stores, just before it is written
	// (the [redact] guardrail's "store" stage): what is stored is what Scrub returns, while
	// the run itself goes on with the entries as they were. It must return a new entry,
	// never change the one it is given (the run still holds it).
	Scrub func(Entry) Entry
	// OutputFilter, when set, makes the filter of the model's words on their way to the
	// run's clients (the [redact] guardrail's "output" stage applied to the stream): the
	// text and the reasoning of each streamed answer go through a filter of their own,
	// which may hold back a tail until it can judge it and gives the rest when the
	// answer's stream ends; the text, reasoning and assistant_message events carry the
	// filtered words too. Every consumer of the events (SSE, the CLI, A2A, MCP) gets
	// them so. The history and the stored messages keep the answer as the model wrote it
	// (Scrub is for the store); the final answer passes the output guardrails.
	OutputFilter func() TextFilter

	Context       []ContextStrategy // default: []ContextStrategy{DefaultContext{}}
	ContextBudget int               // tokens, passed to strategies; 0 = none
	// CompactAt is the model-input size, in estimated tokens, past which the older half
	// of the history is summarised by the model into a stored compaction before the call
	// (compact.go); a context overflow is summarised the same way first. 0: never (the
	// strategies' own compaction on overflow only).
	CompactAt  int
	Hooks      []TerminationHook
	Guardrails []Guardrail
	Approver   Approver
	Permission PermissionFunc
	// Approvals are the host's approval rules, grants and record (approvals.go); nil:
	// none.
	Approvals ApprovalPolicy

	Retry      RetryPolicy
	ToolPolicy ToolPolicy
	Limits     Limits
	Pricing    Pricing

	MaxDecodeRetries   int // structured output decode retries (L10); default 2, <0 = none
	MaxContinuations   int // BeforeFinal continuations (L12); default 3, <0 = none
	MaxOverflowRetries int // context_overflow compactions per model call (L11); default 2
	// MaxTruncationRetries bounds the answers cut by max_tokens a run retries or
	// continues (L15); default 2, <0 = none.
	MaxTruncationRetries int
	// ContinueOnMaxTokens asks the model to continue a final text cut by max_tokens
	// instead of ending the run incomplete (L15).
	ContinueOnMaxTokens bool

	// Mode is ModeReact (the default) or ModePlan: plan, execute, evaluate, replan
	// (plan.go), configured by Plan.
	Mode string
	Plan PlanConfig

	// Handoffs are the agents of the Team this agent may hand the conversation to: the
	// model gets a transfer_to_NAME tool for each (team.go).
	Handoffs []string
	// AsTool lets the other agents of the Team call this one as the tool ask_NAME.
	AsTool bool
	// Description says what the agent is for, in the transfer_to and ask_ tools.
	Description string
	// MaxHandoffs bounds the hand-offs of a run that starts with this agent, and the
	// nesting of ask_ calls; default 5. AllowCycles lets a run hand back to an agent
	// already on its chain.
	MaxHandoffs int
	AllowCycles bool

	// Attachments bounds the image, audio and file parts a session stores (attach.go).
	Attachments AttachmentLimits

	// ToolFallbacks names, per tool, the tools to call in turn when a call of it fails
	// (an error, a panic, a timeout; not the tool's own error answer), each with the
	// same arguments or with its argument mapping's: fallback.go.
	ToolFallbacks map[string][]ToolFallback

	// Runtimes are what some tools need ready before a run's loop starts (a warm
	// instance, a started server), prepared in the preparing state: runtime.go.
	Runtimes []Runtime

	// ToolGroups are sets of equivalent tools each offered as one, the loop choosing the
	// member a call runs on: toolgroup.go.
	ToolGroups []ToolGroup

	// NewID mints every id the loop makes: session ids ("ses_"), run ids ("run_") and
	// the ids of direct calls ("call_"), given the prefix (ids.go). Default: the prefix
	// and 16 random hex digits. A test or a replay gives a deterministic one.
	NewID func(prefix string) string

	// Driver performs everything the loop does to the outside world: the clock, the
	// backoff sleep and jitter, spawning parallel tool calls, and calling the Model, the
	// Tools and the Store above; default GoDriver.
	Driver Driver
	// ResultCache, when set, keeps the results of tools that declare a CachePolicy
	// (CacheableTool) and answers their calls from it (resultcache.go).
	ResultCache ResultCache
	// PromptCache asks the provider to cache each model call's stable prefix (system,
	// tools, older turns): Request.PromptCacheKey is set to one key per agent and session.
	PromptCache bool
}

// The modes of Config.Mode.
const (
	ModeReact = "react"
	ModePlan  = "plan"
)

// ToolPolicy bounds tool use. Zero fields take defaults; a negative value disables a cap.
type ToolPolicy struct {
	MaxParallel       int      // calls run at once; default 1
	MaxDuplicateCalls int      // same tool + same canonical args; default 2 (L8)
	MaxCallsPerTool   int      // default: no cap
	MaxCallsPerRun    int      // default: no cap
	RequireApproval   []string // tool names that need an Approver's yes (L6); "*" = all
	// ApprovalDefault is the verdict for tools RequireApproval does not list: allow
	// (default), ask or deny (L6).
	ApprovalDefault PermissionVerdict
	// ApprovalTTL is how long an approval request waits for its answer; past it the
	// call is denied. Default DefaultApprovalTTL.
	ApprovalTTL time.Duration
	Timeout     time.Duration
}

// Limits end a run with a summary (L9). Zero fields take defaults; MaxIterations
// defaults to 50, the others to none.
type Limits struct {
	MaxIterations  int
	MaxToolRounds  int
	MaxRunDuration time.Duration
	MaxTokens      int     // total tokens over the run
	MaxCostUSD     float64 // over the run
}

// Pricing turns usage into cost when the provider does not report one.
type Pricing struct {
	PromptPerMTok     float64
	CompletionPerMTok float64
	// CachedPromptPerMTok prices the prompt tokens the provider read from its prompt
	// cache (Usage.CacheReadTokens, part of the prompt's); 0: as the other prompt tokens.
	CachedPromptPerMTok float64
}

func defaultInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func (p ToolPolicy) merge(o ToolPolicy) ToolPolicy {
	if o.MaxParallel != 0 {
		p.MaxParallel = o.MaxParallel
	}
	if o.MaxDuplicateCalls != 0 {
		p.MaxDuplicateCalls = o.MaxDuplicateCalls
	}
	if o.MaxCallsPerTool != 0 {
		p.MaxCallsPerTool = o.MaxCallsPerTool
	}
	if o.MaxCallsPerRun != 0 {
		p.MaxCallsPerRun = o.MaxCallsPerRun
	}
	if o.RequireApproval != nil {
		p.RequireApproval = o.RequireApproval
	}
	if o.Timeout != 0 {
		p.Timeout = o.Timeout
	}
	if o.ApprovalDefault != "" {
		p.ApprovalDefault = o.ApprovalDefault
	}
	if o.ApprovalTTL != 0 {
		p.ApprovalTTL = o.ApprovalTTL
	}
	return p
}

func (p ToolPolicy) withDefaults() ToolPolicy {
	if p.MaxParallel <= 0 {
		p.MaxParallel = 1
	}
	p.MaxDuplicateCalls = defaultInt(p.MaxDuplicateCalls, 2)
	return p
}

func (l Limits) merge(o Limits) Limits {
	if o.MaxIterations != 0 {
		l.MaxIterations = o.MaxIterations
	}
	if o.MaxToolRounds != 0 {
		l.MaxToolRounds = o.MaxToolRounds
	}
	if o.MaxRunDuration != 0 {
		l.MaxRunDuration = o.MaxRunDuration
	}
	if o.MaxTokens != 0 {
		l.MaxTokens = o.MaxTokens
	}
	if o.MaxCostUSD != 0 {
		l.MaxCostUSD = o.MaxCostUSD
	}
	return l
}

func (l Limits) withDefaults() Limits {
	l.MaxIterations = defaultInt(l.MaxIterations, 50)
	return l
}
