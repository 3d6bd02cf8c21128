package host

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/agenthost/agenthost/host/confine"
	"github.com/agenthost/agenthost/host/ociplugin"
	"github.com/agenthost/agenthost/host/oidc"
	"github.com/agenthost/agenthost/host/redact"
	"github.com/agenthost/agenthost/host/workflow"
	"github.com/agenthost/agenthost/sandbox"
)

// Manifest is a decoded agent.toml (README.md; `agenthost init` writes a commented one). Paths in it are already resolved against
// the manifest's directory; option values have ${VAR} expanded.
type Manifest struct {
	Agent     AgentConfig               `toml:"agent"`
	Agents    map[string]AgentConfig    `toml:"agents"` // more agents, by name (agents.go)
	Providers map[string]ProviderConfig `toml:"providers"`
	Store     StoreConfig               `toml:"store"`
	Plugins   []PluginConfig            `toml:"plugins"`
	Telemetry TelemetryConfig           `toml:"telemetry"`
	// MCPServers are existing MCP servers whose tools the agent gets (mcptools.go).
	MCPServers []MCPServerConfig `toml:"mcp_servers"`
	// Redact is the built-in PII guardrail (host/redact); nil is off.
	Redact *redact.Config `toml:"redact"`
	// Memory is long-term memory (memory.go); off unless enabled.
	Memory MemoryConfig `toml:"memory"`
	// Workflows are declared pipelines of steps (host/workflow, docs/workflows.md).
	Workflows map[string]workflow.Definition `toml:"workflows"`
	// WorkflowFiles are globs of workflow files, one workflow each (workflowfiles.go).
	WorkflowFiles []string `toml:"workflow_files"`
	// Auth is how serve authenticates callers besides tokens (docs/users.md).
	Auth AuthConfig `toml:"auth"`
	// A2AAgents are remote agents the agent may call over A2A (a2a.go, docs/a2a.md).
	A2AAgents []A2AAgentConfig `toml:"a2a_agents"`

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
	// OIDC accepts JWTs from an identity provider as bearer tokens (host/oidc).
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
	// negative: never). See compactAt.
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

	// Several agents (agents.go): [agent] is the entry agent, [agents.NAME] the others.
	Description string       `toml:"description"`  // what the agent is for, shown to the others' models
	Tools       []string     `toml:"tools"`        // loaded tools it may use, as the model sees them (default: all)
	Handoffs    []string     `toml:"handoffs"`     // agents it may transfer the conversation to
	AsTool      bool         `toml:"as_tool"`      // the others may call it as ask_NAME
	MaxHandoffs int          `toml:"max_handoffs"` // per run (and ask_ nesting); default 5
	AllowCycles bool         `toml:"allow_cycles"` // a run may hand back to an agent it already had
	Mode        string       `toml:"mode"`         // react (default) | plan
	Plan        PlanSettings `toml:"plan"`         // for mode = "plan"
}

// PlanSettings is [agent.plan] / [agents.NAME.plan].
type PlanSettings struct {
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
}

// ToolPolicyConfig is [agent.tool_policy].
type ToolPolicyConfig struct {
	MaxParallel       int      `toml:"max_parallel"`
	MaxDuplicateCalls int      `toml:"max_duplicate_calls"`
	MaxCallsPerTool   int      `toml:"max_calls_per_tool"`
	MaxCallsPerRun    int      `toml:"max_calls_per_run"`
	RequireApproval   []string `toml:"require_approval"` // "*" = every tool
	ApprovalDefault   string   `toml:"approval_default"` // allow | ask | deny, for unlisted tools
	Timeout           Duration `toml:"timeout"`
}

// RetryConfig is [agent.retry].
type RetryConfig struct {
	MaxAttempts int      `toml:"max_attempts"`
	BaseDelay   Duration `toml:"base_delay"`
	MaxDelay    Duration `toml:"max_delay"`
}

// ProviderConfig is one [providers.NAME] table.
type ProviderConfig struct {
	Command      string            `toml:"command"`
	Model        string            `toml:"model"` // overrides agent.model for this provider; ${VAR} expanded
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
	// and the provider's own prices. See fallback.go.
	RequestsPerMinute int            `toml:"requests_per_minute"`
	TokensPerMinute   int            `toml:"tokens_per_minute"`
	BreakerFailures   int            `toml:"breaker_failures"` // consecutive failed calls that open it; default 5
	BreakerCooldown   Duration       `toml:"breaker_cooldown"` // how long it stays open; default 30s
	Pricing           *PricingConfig `toml:"pricing"`          // overrides [agent.pricing] for this provider
	// Sandbox confines the adapter process with Landlock (host/confine), as an MCP
	// server's: the paths it may read and write (relative to the manifest) and whether it
	// may use TCP. Its go-plugin socket stays reachable (providers/confine.go).
	Sandbox *confine.Spec `toml:"sandbox"`
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

// callTimeout maps a manifest timeout onto providers.ClientConfig's convention:
// unset is 0 (the default), an explicit 0 is negative (off).
func callTimeout(d *Duration) time.Duration {
	switch {
	case d == nil:
		return 0
	case *d == 0:
		return -1
	}
	return time.Duration(*d)
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

// PluginConfig is one [[plugins]] entry.
type PluginConfig struct {
	Name        string            `toml:"name"`
	Kind        string            `toml:"kind"` // tool (default) | context | termination | guardrail | permission | planner | evaluator | memory
	ABI         string            `toml:"abi"`  // "" (detect) | mcp | extism | wasi
	Wasm        string            `toml:"wasm"`
	SHA256      string            `toml:"sha256"`
	Args        []string          `toml:"args"`
	PoolSize    int               `toml:"pool_size"`
	Tools       []ToolDecl        `toml:"tools"`
	Permissions PermissionsConfig `toml:"permissions"`
	// Preinit serves the plugin from a snapshot taken after its _initialize ran once
	// (sandbox.Config.Preinit): faster fresh instances, the Go runtime's random state frozen.
	Preinit bool `toml:"preinit"`
	// Verify is the signature a plugin pulled from a registry must carry (ociplugin).
	Verify *VerifyConfig `toml:"verify"`
	// Source is the oci:// reference Wasm was pulled from ("" for a file).
	Source string `toml:"-"`
}

// VerifyConfig is a plugin's verify = { key = "cosign.pub" }: its artifact's signature
// must verify with this ECDSA public key (PEM).
type VerifyConfig struct {
	Key string `toml:"key"`
}

// ToolDecl declares a tool of an extism- or wasi-ABI plugin.
type ToolDecl struct {
	Name        string `toml:"name"`
	Export      string `toml:"export"`
	Description string `toml:"description"`
	Input       string `toml:"input"`
	// InputSchema is a TOML table or a string holding JSON; both decode to JSON here.
	InputSchema Schema `toml:"input_schema"`
	// Args is the argv of this tool's calls (wasi ABI), overriding the plugin's args.
	Args []string `toml:"args"`
}

// PermissionsConfig is [plugins.permissions]: everything is denied unless granted here.
type PermissionsConfig struct {
	Memory       Size              `toml:"memory" json:"memory,omitempty"`
	Timeout      Duration          `toml:"timeout" json:"timeout,omitempty"`
	MaxInput     Size              `toml:"max_input" json:"max_input,omitempty"`
	MaxOutput    Size              `toml:"max_output" json:"max_output,omitempty"`
	AllowedHosts []string          `toml:"allowed_hosts" json:"allowed_hosts,omitempty"`
	AllowedPaths map[string]string `toml:"allowed_paths" json:"allowed_paths,omitempty"`
	Env          []string          `toml:"env" json:"env,omitempty"`
	Config       map[string]string `toml:"config" json:"config,omitempty"`
	Model        bool              `toml:"model" json:"model,omitempty"`
	KV           bool              `toml:"kv" json:"kv,omitempty"`
	// Isolation is which calls may share an instance: pooled | session (default) | call.
	Isolation string `toml:"isolation" json:"isolation,omitempty"`
}

var (
	pluginKinds = []string{"tool", "context", "termination", "guardrail", "permission", "planner", "evaluator", "memory"}
	pluginABIs  = []string{"", "mcp", "extism", "wasi"}
	isolations  = []string{"", "pooled", "session", "call"}
	storeKinds  = []string{"", "memory", "sqlite", "postgres"}
)

// ManifestError is a manifest problem at a file, line and key.
type ManifestError struct {
	File string
	Line int // 0 when unknown
	Key  string
	Msg  string
	Err  error // the cause, when the problem came from one (errors.Is sees through)
}

// Unwrap returns the cause.
func (e *ManifestError) Unwrap() error { return e.Err }

func (e *ManifestError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s: %s", e.File, e.Line, e.Key, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.File, e.Key, e.Msg)
}

// LoadManifest reads and checks a manifest. Every problem is a *ManifestError naming the
// file, line and key: unknown keys, bad sizes and durations, missing files, digest
// mismatches, duplicate names and unknown providers. It records what its oci:// plugins
// resolved to in its lock file (LockUpdate).
func LoadManifest(path string) (*Manifest, error) {
	return LoadManifestWith(path, LockUpdate)
}

// LoadManifestWith is LoadManifest with what to do with the lock file (lock.go).
func LoadManifestWith(path string, lock LockMode) (*Manifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	return decodeManifest(path, data, lock)
}

// ParseManifest decodes and checks manifest text as if read from path (relative paths
// in it start from path's directory; the file need not exist). It is how a manifest
// made by a program, such as `plugins call` on a bare .wasm, is checked like a file.
// It neither reads nor writes a lock file.
func ParseManifest(path string, data []byte) (*Manifest, error) {
	return decodeManifest(path, data, LockOff)
}

// decodeManifest decodes and checks the manifest text data read from path (relative
// paths in it are resolved from path's directory), treating its lock file as lock says.
func decodeManifest(path string, data []byte, lock LockMode) (*Manifest, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	m := &Manifest{Path: path, Dir: filepath.Dir(abs), lines: indexKeys(data)}
	md, err := toml.Decode(string(data), m)
	if err != nil {
		return nil, m.decodeError(data, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		k := und[0].String()
		if hint := suggestKey(k); hint != "" {
			return nil, m.errAt(m.lines.find(k), k, "unknown key (did you mean %q?)", hint)
		}
		return nil, m.errAt(m.lines.find(k), k, "unknown key")
	}
	if err := m.openLock(lock); err != nil {
		return nil, err
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	if err := m.finishLock(); err != nil {
		return nil, err
	}
	m.lock = nil
	return m, nil
}

// typeErr matches the decoder's type errors, which are not ParseErrors.
var typeErr = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`)

// decodeError turns a decoder error into a ManifestError. The decoder keys positions
// without array indexes, so for a key repeated across [[tables]] it reports the last
// one's line; when the message quotes the offending value, the line holding it wins.
func (m *Manifest) decodeError(data []byte, err error) error {
	var pe toml.ParseError
	line, key, msg := 0, "(syntax)", err.Error()
	switch {
	case errors.As(err, &pe):
		// The byte offset, not the decoder's line count, which is one ahead when the
		// error is at a line's end (an unclosed [[table] header).
		line, msg = pe.Position.Line, pe.Message
		if s := pe.Position.Start; s > 0 && s <= len(data) {
			line = 1 + bytes.Count(data[:s], []byte("\n"))
		}
		if pe.LastKey != "" {
			key = pe.LastKey
		}
	case typeErr.MatchString(msg):
		sm := typeErr.FindStringSubmatch(msg)
		line, _ = strconv.Atoi(sm[1])
		key, msg = sm[2], sm[3]
	}
	if cands := m.lines.all(key); len(cands) > 1 {
		text := strings.Split(string(data), "\n")
		for _, q := range quoted(msg) {
			for _, c := range cands {
				if c-1 < len(text) && strings.Contains(text[c-1], q) {
					line = c
				}
			}
		}
	}
	return &ManifestError{File: m.Path, Line: line, Key: key, Msg: strings.TrimPrefix(msg, "toml: ")}
}

// quoted returns the "..." strings in s, unquoted.
func quoted(s string) []string {
	var out []string
	for _, q := range regexp.MustCompile(`"(?:[^"\\]|\\.)*"`).FindAllString(s, -1) {
		if u, err := strconv.Unquote(q); err == nil && u != "" {
			out = append(out, u)
		}
	}
	return out
}

func (m *Manifest) errAt(line int, key, format string, args ...any) error {
	e := &ManifestError{File: m.Path, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)}
	for _, a := range args {
		if err, ok := a.(error); ok {
			e.Err = err
		}
	}
	return e
}

// errKey reports a problem at an indexed key path such as "plugins.1.wasm".
func (m *Manifest) errKey(path, format string, args ...any) error {
	return m.errAt(m.lines.line(path), displayKey(path), format, args...)
}

// check validates what the decoder cannot: references, files, digests, names.
func (m *Manifest) check() error {
	if err := m.checkMemory(); err != nil {
		return err
	}
	if err := m.checkA2A(); err != nil {
		return err
	}
	if c := m.Auth.OIDC; c != nil {
		if err := c.Check(); err != nil {
			key, msg, _ := strings.Cut(err.Error(), ": ")
			return m.errKey("auth.oidc."+key, "%s", msg)
		}
	}
	if m.Redact != nil {
		if _, err := redact.New(*m.Redact); err != nil {
			key, msg, _ := strings.Cut(err.Error(), ": ")
			return m.errKey(key, "%s", msg)
		}
	}
	a := &m.Agent
	if a.Name == "" {
		a.Name = "agent"
	}
	for i, name := range a.Provider {
		if _, ok := m.Providers[name]; !ok {
			return m.errKey("agent.provider", "unknown provider %q (defined: %s)", name, strings.Join(m.providerNames(), ", "))
		}
		if slices.Contains(a.Provider[:i], name) {
			return m.errKey("agent.provider", "provider %q is twice in the fallback chain", name)
		}
	}
	for _, name := range m.providerNames() {
		p := m.Providers[name]
		key := "providers." + name
		if p.Command == "" {
			return m.errKey(key, "no command")
		}
		p.Command = m.resolveCommand(p.Command)
		for k, v := range p.Options {
			p.Options[k] = os.ExpandEnv(v)
		}
		p.Model = os.ExpandEnv(p.Model)
		m.resolveSandbox(p.Sandbox)
		if p.SHA256 != "" {
			if err := checkDigest(p.Command, p.SHA256); err != nil {
				return m.errKey(key+".sha256", "%v", err)
			}
		}
		m.Providers[name] = p
	}
	m.Telemetry.OTLPEndpoint = os.ExpandEnv(m.Telemetry.OTLPEndpoint)
	if p := m.Telemetry.Protocol; p != "" && p != "http/protobuf" && p != "grpc" {
		return m.errKey("telemetry.protocol", "unknown protocol %q (http/protobuf or grpc)", p)
	}
	if !slices.Contains(storeKinds, m.Store.Kind) {
		return m.errKey("store.kind", "unknown store kind %q (memory, sqlite or postgres)", m.Store.Kind)
	}
	if m.Store.Kind == "postgres" {
		m.Store.URL = os.ExpandEnv(m.Store.URL)
		if m.Store.URL == "" {
			return m.errKey("store.url", `a postgres store needs a url: url = "${DATABASE_URL}" or postgres://user@host:5432/db`)
		}
	}
	if m.Store.Kind == "" {
		m.Store.Kind = "sqlite"
	}
	if m.Store.Path == "" {
		m.Store.Path = ".agenthost/sessions.db"
	}
	m.Store.Path = m.resolve(m.Store.Path)
	if m.Store.KeyFile != "" {
		if m.Store.Kind == "memory" {
			return m.errKey("store.key_file", "a memory store keeps nothing at rest to seal")
		}
		m.Store.KeyFile = m.resolve(m.Store.KeyFile)
	}
	if err := m.checkNumbers(); err != nil {
		return err
	}
	if err := m.checkAgents(); err != nil {
		return err
	}
	names := map[string]int{}
	for i := range m.Plugins {
		if err := m.checkPlugin(i, names); err != nil {
			return err
		}
	}
	for i := range m.MCPServers {
		if err := m.checkMCPServer(i, names); err != nil {
			return err
		}
	}
	if err := m.loadWorkflowFiles(); err != nil {
		return err
	}
	return m.checkWorkflows()
}

func (m *Manifest) checkPlugin(i int, names map[string]int) error {
	p := &m.Plugins[i]
	key := fmt.Sprintf("plugins.%d", i)
	if p.Name == "" {
		return m.errKey(key, "plugin has no name")
	}
	if strings.HasPrefix(p.Name, "agenthost/") {
		// The host keeps its own state in the store's key/value table under such names
		// (workflow runs: agenthost/workflows); a plugin's kv must not reach it.
		return m.errKey(key+".name", "plugin names starting \"agenthost/\" are the host's (%q)", p.Name)
	}
	if j, dup := names[p.Name]; dup {
		return m.errKey(key+".name", "duplicate plugin name %q (also plugins[%d])", p.Name, j)
	}
	names[p.Name] = i
	if p.Kind == "" {
		p.Kind = "tool"
	}
	if !slices.Contains(pluginKinds, p.Kind) {
		return m.errKey(key+".kind", "unknown kind %q (one of %s)", p.Kind, strings.Join(pluginKinds, ", "))
	}
	if !slices.Contains(pluginABIs, p.ABI) {
		return m.errKey(key+".abi", "unknown abi %q (mcp, extism or wasi)", p.ABI)
	}
	if !slices.Contains(isolations, p.Permissions.Isolation) {
		return m.errKey(key+".permissions.isolation", "unknown isolation %q (pooled, session or call)", p.Permissions.Isolation)
	}
	if p.Preinit && p.ABI == "wasi" {
		return m.errKey(key+".preinit", "preinit applies to reactor plugins (abi mcp or extism), not to a wasi command")
	}
	if p.Wasm == "" {
		return m.errKey(key, "plugin %q has no wasm file", p.Name)
	}
	if strings.HasPrefix(p.Wasm, ociplugin.Scheme) {
		if err := m.pullPlugin(p, key); err != nil {
			return err
		}
	} else if p.Verify != nil {
		return m.errKey(key+".verify", "verify applies to plugins pulled from a registry (wasm = \"oci://…\")")
	}
	p.Wasm = m.resolve(p.Wasm)
	if _, err := os.Stat(p.Wasm); err != nil {
		return m.errKey(key+".wasm", "cannot read %s: %v", p.Wasm, errors.Unwrap(err))
	}
	if p.SHA256 != "" {
		// An early error with the manifest's line. It protects nothing by itself: the
		// sandbox checks the pin again on the bytes it compiles (sandboxConfig).
		if err := sandbox.VerifyModule(p.Wasm, p.SHA256); err != nil {
			return m.errKey(key+".sha256", "%v", err)
		}
	}
	if (p.ABI == "extism" || p.ABI == "wasi") && len(p.Tools) == 0 && p.Kind == "tool" {
		return m.errKey(key+".abi", "abi %q needs its tools declared in [[plugins.tools]]", p.ABI)
	}
	tools := map[string]bool{}
	for j, t := range p.Tools {
		tk := fmt.Sprintf("%s.tools.%d", key, j)
		if t.Name == "" {
			return m.errKey(tk, "tool has no name")
		}
		if tools[t.Name] {
			return m.errKey(tk+".name", "duplicate tool name %q in plugin %q", t.Name, p.Name)
		}
		tools[t.Name] = true
	}
	paths := map[string]string{}
	for host, guest := range p.Permissions.AllowedPaths {
		ro := strings.HasPrefix(host, "ro:")
		h := m.resolve(strings.TrimPrefix(host, "ro:"))
		if _, err := os.Stat(h); err != nil {
			return m.errKey(key+".permissions.allowed_paths", "cannot read %s: %v", h, errors.Unwrap(err))
		}
		if ro {
			h = "ro:" + h
		}
		paths[h] = guest
	}
	p.Permissions.AllowedPaths = paths
	for k, v := range p.Permissions.Config { // as in provider options: secrets stay out of the file
		p.Permissions.Config[k] = os.ExpandEnv(v)
	}
	return nil
}

func (m *Manifest) providerNames() []string {
	var out []string
	for n := range m.Providers {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// resolve makes a path relative to the manifest's directory absolute.
func (m *Manifest) resolve(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(m.Dir, p)
}

// resolveCommand resolves a command with a slash against the manifest's directory. A
// bare name is looked for next to the running agenthost binary first, where `make
// install`, `go install` and a release archive put the adapters, so a manifest works
// from any directory without PATH set up; otherwise it is left for a PATH lookup when
// the provider starts.
func (m *Manifest) resolveCommand(c string) string {
	if strings.ContainsRune(c, '/') {
		return m.resolve(c)
	}
	if exe, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(exe), c)
		if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return beside
		}
	}
	return c
}

// checkDigest compares a pinned file's sha256 with the manifest's. Only a regular file
// can be pinned: the file is opened without blocking (a FIFO would otherwise wait for a
// writer, and the manifest would never load) and anything else is refused. The provider
// client checks its adapter again when it starts it, and runs the bytes it checked.
func checkDigest(path, want string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("cannot read %s to check its digest: %v", path, errors.Unwrap(err))
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return fmt.Errorf("cannot read %s to check its digest: %v", path, err)
	} else if !fi.Mode().IsRegular() {
		return fmt.Errorf("cannot check the digest of %s: not a regular file (mode %s)", path, fi.Mode().Type())
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("read %s: %v", path, err)
	}
	got := hex.EncodeToString(h.Sum(nil))
	if !strings.EqualFold(got, want) {
		return fmt.Errorf("digest mismatch for %s: manifest pins %s, file is %s", path, want, got)
	}
	return nil
}

// Size is a byte count written as "32MiB", "512 KiB", "1GB" or a plain integer.
type Size uint64

// UnmarshalText implements encoding.TextUnmarshaler.
// A size written as 0 is refused: leaving the key out is how to ask for the default.
func (s *Size) UnmarshalText(b []byte) error {
	v, err := ParseSize(string(b))
	if err != nil {
		return err
	}
	if v == 0 {
		return fmt.Errorf("invalid size %q: must be more than 0 (leave the key out for the default)", string(b))
	}
	*s = Size(v)
	return nil
}

// MarshalText writes the size as a manifest would: "32MiB", "1536KiB", "100B".
func (s Size) MarshalText() ([]byte, error) {
	for _, u := range []struct {
		name  string
		bytes uint64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if s >= Size(u.bytes) && uint64(s)%u.bytes == 0 {
			return []byte(fmt.Sprintf("%d%s", uint64(s)/u.bytes, u.name)), nil
		}
	}
	return []byte(fmt.Sprintf("%dB", uint64(s))), nil
}

// MaxSize is the largest size a manifest may give: sizes become int64 byte counts.
const MaxSize = math.MaxInt64

// ParseSize parses a size with an optional unit: B, KB/KiB, MB/MiB, GB/GiB (KB = 1000).
// A size that overflows (more than MaxSize bytes) is an error, never a wrapped value.
func ParseSize(in string) (uint64, error) {
	t := strings.TrimSpace(in)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("invalid size %q: want a number with a unit such as 32MiB", in)
	}
	units := map[string]uint64{"": 1, "b": 1, "kb": 1e3, "kib": 1 << 10, "mb": 1e6, "mib": 1 << 20, "gb": 1e9, "gib": 1 << 30}
	mult, ok := units[strings.ToLower(strings.TrimSpace(t[i:]))]
	if !ok {
		return 0, fmt.Errorf("invalid size %q: unknown unit %q (B, KB, KiB, MB, MiB, GB, GiB)", in, strings.TrimSpace(t[i:]))
	}
	n, err := strconv.ParseUint(t[:i], 10, 64)
	if err != nil || n > MaxSize/mult {
		return 0, fmt.Errorf("invalid size %q: too large (at most %d bytes)", in, uint64(MaxSize))
	}
	return n * mult, nil
}

// Duration is a time.Duration written as "2s", "500ms", "1m30s".
type Duration time.Duration

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := parseDuration(string(b))
	if err != nil {
		return fmt.Errorf("invalid duration %q: want e.g. 2s, 500ms or 30d", string(b))
	}
	if v < 0 {
		return fmt.Errorf("invalid duration %q: negative", string(b))
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes the duration as a manifest would: "2s", "1m30s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// Schema is a JSON Schema given as a TOML table or as a string holding JSON.
type Schema json.RawMessage

// UnmarshalTOML implements toml.Unmarshaler.
func (s *Schema) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case string:
		if !json.Valid([]byte(x)) {
			return fmt.Errorf("input_schema is a string but not JSON: %q", x)
		}
		*s = Schema(x)
	case map[string]any:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Errorf("input_schema: %w", err)
		}
		*s = Schema(b)
	default:
		return fmt.Errorf("input_schema must be a table or a JSON string, not %T", v)
	}
	return nil
}

// parseDuration is time.ParseDuration plus whole days ("30d"), the unit retention
// periods are written in.
func parseDuration(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n < 0 || n > 106751 { // time.Duration's range
			return 0, fmt.Errorf("invalid number of days %q", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}
