package manifest

import (
	"fmt"
	"math"
)

// Upper bounds for counts that size something the host allocates up front: a pool of
// Wasm instances, a set of parallel tool calls. They are far above any useful value and
// keep a typo from reserving memory for billions of slots.
const (
	maxPoolSize    = 1024
	maxParallel    = 1024
	maxWasmMemory  = 4 << 30 // wasm32 addresses at most 4 GiB
	maxRetryTries  = 100
	maxFiniteLimit = math.MaxInt32
)

// intRule bounds one integer key. The decoder refuses integers that do not fit in
// an int64 itself; these rules refuse the ones that fit but mean nothing: negative
// counts and counts too large to act on.
type intRule struct {
	key      string
	v        int
	min, max int
}

// checkNumbers refuses numbers that would otherwise load silently as a default or
// wrap around: negative counts, counts beyond what the host can allocate, costs that
// are negative or not finite, memory beyond what a wasm32 module can address.
func (m *Manifest) checkNumbers() error {
	a := &m.Agent
	rules := []intRule{
		{"agent.max_iterations", a.MaxIterations, 0, maxFiniteLimit},
		{"agent.max_tool_rounds", a.MaxToolRounds, 0, maxFiniteLimit},
		{"agent.max_tokens", a.MaxTokens, 0, math.MaxInt},
		{"agent.context_budget", a.ContextBudget, 0, math.MaxInt},
		{"agent.context_window", a.ContextWindow, 0, math.MaxInt32},
		{"agent.max_continuations", a.MaxContinuations, 0, maxFiniteLimit},
		{"agent.max_decode_retries", a.MaxDecodeRetries, 0, maxRetryTries},
		{"agent.tool_policy.max_parallel", a.ToolPolicy.MaxParallel, 0, maxParallel},
		{"agent.tool_policy.max_duplicate_calls", a.ToolPolicy.MaxDuplicateCalls, 0, maxFiniteLimit},
		{"agent.tool_policy.max_calls_per_tool", a.ToolPolicy.MaxCallsPerTool, 0, maxFiniteLimit},
		{"agent.tool_policy.max_calls_per_run", a.ToolPolicy.MaxCallsPerRun, 0, maxFiniteLimit},
		{"agent.retry.max_attempts", a.Retry.MaxAttempts, 0, maxRetryTries},
	}
	for i, p := range m.Plugins {
		rules = append(rules, intRule{fmt.Sprintf("plugins.%d.pool_size", i), p.PoolSize, 0, maxPoolSize})
	}
	var prices []struct {
		key string
		v   float64
	}
	for _, name := range m.ProviderNames() {
		p, key := m.Providers[name], "providers."+name
		rules = append(rules,
			intRule{key + ".requests_per_minute", p.RequestsPerMinute, 0, maxFiniteLimit},
			intRule{key + ".tokens_per_minute", p.TokensPerMinute, 0, math.MaxInt32},
			intRule{key + ".breaker_failures", p.BreakerFailures, 0, maxFiniteLimit})
		if p.Pricing != nil {
			prices = append(prices, struct {
				key string
				v   float64
			}{key + ".pricing.prompt_per_mtok", p.Pricing.PromptPerMTok}, struct {
				key string
				v   float64
			}{key + ".pricing.completion_per_mtok", p.Pricing.CompletionPerMTok})
		}
	}
	for _, r := range rules {
		if r.v < r.min || r.v > r.max {
			return m.ErrorAt(r.key, "%d is out of range (%d to %d)", r.v, r.min, r.max)
		}
	}
	prices = append(prices, []struct {
		key string
		v   float64
	}{
		{"agent.max_cost_usd", a.MaxCostUSD},
		{"agent.compact_at", max(a.CompactAt, 0)}, // negative turns summarising off
		{"agent.pricing.prompt_per_mtok", a.Pricing.PromptPerMTok},
		{"agent.pricing.completion_per_mtok", a.Pricing.CompletionPerMTok},
	}...)
	for _, f := range prices {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return m.ErrorAt(f.key, "%v is not a non-negative finite number", f.v)
		}
	}
	if a.CompactAt > 1 {
		return m.ErrorAt("agent.compact_at", "%v: a share of the context window, at most 1 (negative: never summarise)", a.CompactAt)
	}
	for i, p := range m.Plugins {
		if p.Permissions.Memory > maxWasmMemory {
			return m.ErrorAt(fmt.Sprintf("plugins.%d.permissions.memory", i),
				"%d bytes is more than a wasm32 module can address (4GiB)", uint64(p.Permissions.Memory))
		}
	}
	return nil
}
