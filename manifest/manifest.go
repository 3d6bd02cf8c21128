package manifest

import (
	"fmt"
	"net/url"

	"github.com/agenthost/agenthost/approval"
	"github.com/agenthost/agenthost/confine"
	"github.com/agenthost/agenthost/oidc"
	"github.com/agenthost/agenthost/redact"
	"github.com/agenthost/agenthost/workflow"
)

// Manifest is a decoded agent.toml (README.md; `agenthost init` writes a commented
// one). Paths in it are already resolved against
// the manifest's directory; option values have ${VAR} expanded.
type Manifest struct {
	Agent     AgentConfig               `toml:"agent"`
	Agents    map[string]AgentConfig    `toml:"agents"` // more agents, by name (agents.go)
	Providers map[string]ProviderConfig `toml:"providers"`
	Store     StoreConfig               `toml:"store"`
	Plugins   []PluginConfig            `toml:"plugins"`
	Telemetry TelemetryConfig           `toml:"telemetry"`
	// MCPServers are existing MCP servers whose tools the agent gets (mcpservers.go).
	MCPServers []MCPServerConfig `toml:"mcp_servers"`
	// Redact is the built-in PII guardrail (redact); nil is off.
	Redact *redact.Config `toml:"redact"`
	// Memory is long-term memory (memory.go); off unless enabled.
	Memory MemoryConfig `toml:"memory"`
	// Workflows are declared pipelines of steps (workflow, docs/workflows.md).
	Workflows map[string]workflow.Definition `toml:"workflows"`
	// WorkflowFiles are globs of workflow files, one workflow each (workflowfiles.go).
	WorkflowFiles []string `toml:"workflow_files"`
	// AllowOutsidePaths lets the confined paths (paths.go) be absolute or lead out of the
	// manifest's directory; off, they stay inside it.
	AllowOutsidePaths bool `toml:"allow_outside_paths"`
	// Auth is how serve authenticates callers besides tokens (docs/users.md).
	Auth AuthConfig `toml:"auth"`
	// A2AAgents are remote agents the agent may call over A2A (a2a.go, docs/a2a.md).
	A2AAgents []A2AAgentConfig `toml:"a2a_agents"`
	// Admission bounds the runs in flight, the queue, and each user's share (admission.go).
	Admission AdmissionConfig `toml:"admission"`
	// Attachments bounds the media parts a session stores (attachments.go).
	Attachments AttachmentsConfig `toml:"attachments"`
	// Serve is how `serve` and `worker` run as a service (docs/deploy.md).
	Serve ServeConfig `toml:"serve"`
	// Schedules fire prompts or workflows as a user on a cron or an interval (schedules.go).
	Schedules []ScheduleConfig `toml:"schedules"`
	// Approvals are the approval rules, first match wins (approvals.go, docs/approvals.md).
	Approvals []approval.Rule `toml:"approvals"`
	// Tools are [tools.NAME] tables: how the loop treats a tool, by the name the model
	// sees, whoever offers it (fallback.go).
	Tools map[string]ToolConfig `toml:"tools"`
	// ToolGroups are sets of equivalent tools, each offered to the model as one
	// (toolgroups.go).
	ToolGroups map[string]ToolGroupConfig `toml:"tool_groups"`

	// Path is the manifest file; Dir the directory its relative paths start from.
	Path string `toml:"-"`
	Dir  string `toml:"-"`
	// Warnings are what the check noticed but does not stop on (a plugin's tag that
	// moved since agent.lock recorded it); Open passes them on as the host's.
	Warnings []string `toml:"-"`

	lines         *keyLines
	lock          *lockState                    // agent.lock while the manifest is checked (lock.go)
	workflows     map[string]*workflow.Workflow // compiled Workflows
	workflowFiles map[string]*workflowFile      // workflows declared in workflow files, by name
}

// AuthConfig is the [auth] table.
type AuthConfig struct {
	// OIDC accepts JWTs from an identity provider as bearer tokens (oidc).
	OIDC *oidc.Config `toml:"oidc"`
}

// AgentConfig is the [agent] table.
type AgentConfig struct {
	Name           string       `toml:"name"`
	SystemPrompt   string       `toml:"system_prompt"`
	Provider       ProviderList `toml:"provider"` // a name, or a fallback chain of names
	Model          string       `toml:"model"`
	MaxIterations  int          `toml:"max_iterations"`
	MaxToolRounds  int          `toml:"max_tool_rounds"`
	MaxRunDuration Duration     `toml:"max_run_duration"`
	MaxTokens      int          `toml:"max_tokens"`
	MaxCostUSD     float64      `toml:"max_cost_usd"`
	ContextBudget  int          `toml:"context_budget"`
	// ContextWindow is the model's context window in tokens (default 128000) and
	// CompactAt the share of it past which older turns are summarised (default 0.8;
	// negative: never). See compactAt in host/host.go.
	ContextWindow    int              `toml:"context_window"`
	CompactAt        float64          `toml:"compact_at"`
	MaxContinuations int              `toml:"max_continuations"`
	MaxDecodeRetries int              `toml:"max_decode_retries"`
	ToolPolicy       ToolPolicyConfig `toml:"tool_policy"`
	Retry            RetryConfig      `toml:"retry"`
	Pricing          PricingConfig    `toml:"pricing"`

	// Run defaults, each overridable per run (CLI flags, HTTP forwardedProps):
	OutputSchema Schema            `toml:"output_schema"` // the final answer must be JSON matching it (L10); a table or a JSON string
	ToolChoice   string            `toml:"tool_choice"`   // first model call: auto | none | required | a tool's name
	AllowedTools []string          `toml:"allowed_tools"` // the tools offered (default: all)
	Metadata     map[string]string `toml:"metadata"`      // passed to the provider with every call
	PromptCache  bool              `toml:"prompt_cache"`  // provider prompt caching on the stable prefix (docs/caching.md)

	// Several agents (agents.go): [agent] is the entry agent, [agents.NAME] the others.
	Description string       `toml:"description"`  // what the agent is for, shown to the others' models
	Tools       ToolList     `toml:"tools"`        // loaded tools it may use, as the model sees them (default: all); false: tools off (toolsoff.go)
	ToolsOff    bool         `toml:"-"`            // tools = false: no tool offered, every call refused
	Handoffs    []string     `toml:"handoffs"`     // agents it may transfer the conversation to
	AsTool      bool         `toml:"as_tool"`      // the others may call it as ask_NAME
	MaxHandoffs int          `toml:"max_handoffs"` // per run (and ask_ nesting); default 5
	AllowCycles bool         `toml:"allow_cycles"` // a run may hand back to an agent it already had
	Mode        string       `toml:"mode"`         // react (default) | plan
	Plan        PlanConfig   `toml:"plan"`         // for mode = "plan"
	Merge       *MergeConfig `toml:"merge"`        // [agents.NAME] only: ask these agents and merge (agents.go)
}

// PlanConfig is [agent.plan] / [agents.NAME.plan].
type PlanConfig struct {
	MaxSteps    int      `toml:"max_steps"`    // steps executed over all revisions; default 8
	MaxReplans  int      `toml:"max_replans"`  // default 2
	StepTimeout Duration `toml:"step_timeout"` // for steps without their own timeout
	MaxParallel int      `toml:"max_parallel"` // tool steps of a plan with dependencies run at once; default 4
	Planner     string   `toml:"planner"`      // "model" (default) or a plugin of kind planner
	Evaluator   string   `toml:"evaluator"`    // "model" (default) or a plugin of kind evaluator
}

// PricingConfig is [agent.pricing]: US dollars per million tokens, used for cost_usd and
// max_cost_usd when the provider reports no cost itself.
type PricingConfig struct {
	PromptPerMTok     float64 `toml:"prompt_per_mtok"`
	CompletionPerMTok float64 `toml:"completion_per_mtok"`
	// CachedPromptPerMTok prices prompt tokens read from the provider's prompt cache;
	// 0: as prompt_per_mtok (docs/caching.md).
	CachedPromptPerMTok float64 `toml:"cached_prompt_per_mtok"`
}

// ToolPolicyConfig is [agent.tool_policy].
type ToolPolicyConfig struct {
	MaxParallel       int      `toml:"max_parallel"`
	MaxDuplicateCalls int      `toml:"max_duplicate_calls"`
	MaxCallsPerTool   int      `toml:"max_calls_per_tool"`
	MaxCallsPerRun    int      `toml:"max_calls_per_run"`
	RequireApproval   []string `toml:"require_approval"` // "*" = every tool
	ApprovalDefault   string   `toml:"approval_default"` // allow | ask | deny, for unlisted tools
	// ApprovalTTL is how long an approval request waits before the call is denied
	// (default 24h; docs/approvals.md).
	ApprovalTTL Duration `toml:"approval_ttl"`
	Timeout     Duration `toml:"timeout"`
}

// RetryConfig is [agent.retry].
type RetryConfig struct {
	MaxAttempts int      `toml:"max_attempts"`
	BaseDelay   Duration `toml:"base_delay"`
	MaxDelay    Duration `toml:"max_delay"`
	RetryOn     RetryOn  `toml:"retry_on"` // error kinds and HTTP statuses to retry (retry.go)
}

// ProviderConfig is one [providers.NAME] table.
type ProviderConfig struct {
	Command string `toml:"command"`
	Model   string `toml:"model"` // overrides agent.model for this provider; ${VAR} expanded
	// ModelUnset names the variables of model that were not set when it was expanded
	// to nothing: a run on this provider is refused rather than sent agent.model.
	ModelUnset   []string          `toml:"-"`
	Args         []string          `toml:"args"`
	Env          []string          `toml:"env"`
	Options      map[string]string `toml:"options"`
	SHA256       string            `toml:"sha256"`
	StartTimeout Duration          `toml:"start_timeout"`
	// FirstTokenTimeout and IdleTimeout bound each model call: the wait for its
	// first event and the silence between two events. Unset means the defaults
	// (120s, 60s); "0s" turns the timeout off.
	FirstTokenTimeout *Duration `toml:"first_token_timeout"`
	IdleTimeout       *Duration `toml:"idle_timeout"`

	// Protection for a fallback chain (agent.provider = [...]) and for every process
	// sharing this provider: client-side rate limits that make calls wait rather than
	// draw 429s, a circuit breaker that stops calling a failing provider for a while,
	// and the provider's own prices. See host/fallback.go.
	RequestsPerMinute int            `toml:"requests_per_minute"`
	TokensPerMinute   int            `toml:"tokens_per_minute"`
	BreakerFailures   int            `toml:"breaker_failures"` // consecutive failed calls that open it; default 5
	BreakerCooldown   Duration       `toml:"breaker_cooldown"` // how long it stays open; default 30s
	Pricing           *PricingConfig `toml:"pricing"`          // overrides [agent.pricing] for this provider
	// Sandbox confines the adapter process (confine), as an MCP server's: the paths
	// it may read and write (relative to the manifest) and whether it may use the network
	// (default: yes, it calls its API). Its go-plugin socket stays reachable
	// (providers/confine.go). After checking it is the whole confinement, defaults
	// included (sandbox.go), or nil when Confine is off.
	Sandbox *confine.Spec `toml:"sandbox"`
	// Confine is confine = true (the default), false or "required" (sandbox.go).
	Confine Confine `toml:"confine"`
}

// ProviderList is agent.provider: one provider's name, or a list of them tried in order
// (a fallback chain).
type ProviderList []string

// UnmarshalTOML accepts a string or an array of strings.
func (p *ProviderList) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case string:
		*p = ProviderList{x}
		if x == "" {
			*p = nil
		}
		return nil
	case []any:
		out := make(ProviderList, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok || s == "" {
				return fmt.Errorf("agent.provider: want a provider name or a list of names, got %v", e)
			}
			out = append(out, s)
		}
		*p = out
		return nil
	}
	return fmt.Errorf("agent.provider: want a provider name or a list of names, got %T", v)
}

// TelemetryConfig is [telemetry]; the standard OTEL_EXPORTER_OTLP_* variables do the
// same without it (README.md, "Observability").
type TelemetryConfig struct {
	OTLPEndpoint   string `toml:"otlp_endpoint"`   // e.g. http://127.0.0.1:4318; ${VAR} expanded
	Protocol       string `toml:"protocol"`        // http/protobuf (default) | grpc
	CaptureContent bool   `toml:"capture_content"` // record prompts, completions and tool data in spans
}

// StoreConfig is [store].
type StoreConfig struct {
	Kind string `toml:"kind"` // memory | sqlite (default) | postgres
	Path string `toml:"path"` // sqlite: the file
	URL  string `toml:"url"`  // postgres: postgres://…; ${VAR} is expanded ("${DATABASE_URL}")
	// Retention deletes sessions not updated for this long ("30d"): serve prunes at start
	// and every hour, and "sessions prune" on demand. 0 keeps everything.
	Retention Duration `toml:"retention"`
	// KeyFile holds the keys that seal what the store keeps (store/seal, docs/encryption.md);
	// AGENTHOST_STORE_KEY gives them instead. Neither: nothing is sealed.
	KeyFile string `toml:"key_file"`
}

// Where names the store for messages: the SQLite file, the PostgreSQL server and
// database (never the password), or "memory".
func (c StoreConfig) Where() string {
	switch c.Kind {
	case "memory":
		return "memory"
	case "postgres":
		if u, err := url.Parse(c.URL); err == nil {
			return "postgres " + u.Host + u.Path
		}
		return "postgres"
	}
	return c.Path
}

// ServeConfig is [serve]: what a serving node does when it is told to stop.
type ServeConfig struct {
	// Grace is how long the runs in progress may finish after SIGTERM before they are
	// aborted (and, on a cluster, handed back to River); default 20s, "0s" aborts at once.
	// --grace overrides it.
	Grace *Duration `toml:"grace"`
}
