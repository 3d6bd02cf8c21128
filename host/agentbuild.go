package host

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
	"github.com/agenthost/agenthost/redact"
	"github.com/agenthost/agenthost/sandbox"
)

// startAgent starts the agent's providers and builds the agent on them.
func (h *Host) startAgent(ctx context.Context) (err error) {
	model, modelName, err := h.chainModel(ctx, h.Manifest.Agent)
	if err != nil {
		return err
	}
	h.model, h.modelName, h.approver = model, modelName, h.opts.Approver
	if h.Agent, err = h.newAgent(model, modelName, h.opts.Approver); err != nil {
		return err
	}
	h.live.cur.Store(&generation{agent: h.Agent, plugins: h.plugins})
	return nil
}

// newAgent wires the loop from the manifest and the loaded plugins: the entry agent,
// and with [agents.NAME] tables the team it belongs to (agents.go).
func (h *Host) newAgent(model loop.Model, modelName string, approver loop.Approver) (*loop.Agent, error) {
	entry, err := h.agentFrom(h.Manifest.Agent, model, modelName, approver)
	if err != nil || len(h.Manifest.Agents) == 0 {
		return entry, err
	}
	return h.teamOf(entry, model, modelName, approver)
}

// agentFrom builds one agent of the manifest.
func (h *Host) agentFrom(a manifest.AgentConfig, model loop.Model, modelName string, approver loop.Approver) (*loop.Agent, error) {
	cfg := loop.Config{
		Name: a.Name, SystemPrompt: a.SystemPrompt, Model: model, ModelName: modelName, Store: h.Store, ToolChoice: a.ToolChoice,
		ToolsOff: a.ToolsOff, StoreOutage: h.storeOutage(),
		ContextBudget: a.ContextBudget, CompactAt: compactAt(a), Approver: h.auditedApprover(approver),
		MaxContinuations: a.MaxContinuations, MaxDecodeRetries: a.MaxDecodeRetries,
		Retry: retryPolicy(a.Retry),
		ToolPolicy: loop.ToolPolicy{MaxParallel: a.ToolPolicy.MaxParallel, MaxDuplicateCalls: a.ToolPolicy.MaxDuplicateCalls,
			MaxCallsPerTool: a.ToolPolicy.MaxCallsPerTool, MaxCallsPerRun: a.ToolPolicy.MaxCallsPerRun,
			RequireApproval: append(slices.Clone(a.ToolPolicy.RequireApproval), h.requireApprovalOf()...), Timeout: time.Duration(a.ToolPolicy.Timeout),
			ApprovalDefault: loop.PermissionVerdict(a.ToolPolicy.ApprovalDefault), ApprovalTTL: time.Duration(a.ToolPolicy.ApprovalTTL)},
		Pricing:     toPricing(a.Pricing),
		Attachments: loop.AttachmentLimits{PartBytes: int64(h.Manifest.Attachments.MaxPart), SessionBytes: int64(h.Manifest.Attachments.MaxSession)},
		Limits: loop.Limits{MaxIterations: a.MaxIterations, MaxToolRounds: a.MaxToolRounds,
			MaxRunDuration: time.Duration(a.MaxRunDuration), MaxTokens: a.MaxTokens, MaxCostUSD: a.MaxCostUSD},
	}
	rules, err := h.approvalsOf()
	if err != nil {
		return nil, err
	}
	cfg.Approvals = rules
	var strategies []loop.ContextStrategy
	var permits []*sandbox.Plugin
	if h.Manifest.Redact != nil { // first, so guardrail plugins see redacted text too
		r, err := redact.New(*h.Manifest.Redact)
		if err != nil {
			return nil, err
		}
		cfg.Guardrails = append(cfg.Guardrails, r)
		if r.Has(redact.StageStore) {
			cfg.Scrub = r.Entry
		}
		if r.Has(loop.StageOutput) { // the answer as it streams, before it leaves (SSE, CLI, A2A, MCP)
			cfg.OutputFilter = func() loop.TextFilter { return r.Stream() }
		}
	}
	for i, p := range h.plugins {
		switch h.Manifest.Plugins[i].Kind {
		case "context":
			strategies = append(strategies, wasmContext{p})
		case "termination":
			cfg.Hooks = append(cfg.Hooks, wasmTermination{p: p, onStep: hasExport(p, "on_step"), onFinal: hasExport(p, "before_final")})
		case "guardrail":
			cfg.Guardrails = append(cfg.Guardrails, wasmGuardrail{p})
		case "permission":
			permits = append(permits, p)
		}
	}
	if len(permits) > 0 {
		cfg.Permission = wasmPermission(permits)
	}
	if mc := h.Manifest.Memory; mc.Enabled && h.memory != nil && mc.Recall >= 0 {
		strategies = append([]loop.ContextStrategy{memoryRecall{s: h.memSvc, n: cmp.Or(h.Manifest.Memory.Recall, manifest.DefaultRecall), rankers: h.memoryPlugins("rank")}}, strategies...)
	}
	if len(strategies) > 0 {
		// Plugins shape the input; the default strategy still trims old tool outputs and
		// compacts on overflow after them.
		cfg.Context = append(strategies, loop.DefaultContext{})
	}
	cfg.Description, cfg.Handoffs, cfg.AsTool = a.Description, a.Handoffs, a.AsTool
	cfg.MaxHandoffs, cfg.AllowCycles = a.MaxHandoffs, a.AllowCycles
	cfg.Mode, cfg.Plan = a.Mode, h.planConfig(a)
	own, err := h.toolsOf(a)
	if err != nil {
		return nil, err
	}
	own = append(own, h.memoryTools()...)
	if err := h.wireToolChoices(&cfg, own); err != nil {
		return nil, err
	}
	tools, err := loop.NewToolSet(own...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.Manifest.Path, err)
	}
	cfg.Tools = tools
	h.wireCache(&cfg, a)
	return loop.New(cfg)
}
