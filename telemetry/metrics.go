package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/agenthost/agenthost/loop"
)

// instruments are the metrics of README.md, "Observability". In Prometheus text each
// name has its dots as underscores, counters end in _total and histograms in the unit.
type instruments struct {
	runs          metric.Int64Counter
	modelCalls    metric.Int64Counter
	tokens        metric.Int64Counter
	cost          metric.Float64Counter
	toolCalls     metric.Int64Counter
	timeouts      metric.Int64Counter
	retries       metric.Int64Counter
	ttft          metric.Float64Histogram
	modelDuration metric.Float64Histogram
	toolDuration  metric.Float64Histogram
	runDuration   metric.Float64Histogram
	feedback      metric.Int64Counter
	toolCache     metric.Int64Counter
}

func (m *instruments) init(meter metric.Meter) error {
	var errs [13]error
	m.runs, errs[0] = meter.Int64Counter("agenthost.runs", metric.WithDescription("Runs ended, by status and reason."))
	m.modelCalls, errs[1] = meter.Int64Counter("agenthost.model.calls", metric.WithDescription("Model call attempts, by provider and outcome."))
	m.tokens, errs[2] = meter.Int64Counter("agenthost.tokens", metric.WithDescription("Tokens, by type (prompt or completion)."))
	m.cost, errs[3] = meter.Float64Counter("agenthost.cost", metric.WithUnit("USD"), metric.WithDescription("Cost of model calls in US dollars."))
	m.toolCalls, errs[4] = meter.Int64Counter("agenthost.tool.calls", metric.WithDescription("Tool calls, by plugin, tool and outcome."))
	m.timeouts, errs[5] = meter.Int64Counter("agenthost.timeouts", metric.WithDescription("Model and tool calls that timed out, by where."))
	m.retries, errs[6] = meter.Int64Counter("agenthost.retries", metric.WithDescription("Model calls retried."))
	buckets := metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
	m.ttft, errs[7] = meter.Float64Histogram("agenthost.model.time_to_first_token", metric.WithUnit("s"), buckets)
	m.modelDuration, errs[8] = meter.Float64Histogram("agenthost.model.duration", metric.WithUnit("s"), buckets)
	m.toolDuration, errs[9] = meter.Float64Histogram("agenthost.tool.duration", metric.WithUnit("s"), buckets)
	m.runDuration, errs[10] = meter.Float64Histogram("agenthost.run.duration", metric.WithUnit("s"), buckets)
	m.feedback, errs[11] = meter.Int64Counter("agenthost.feedback", metric.WithDescription("Feedback on runs, by agent and score."))
	m.toolCache, errs[12] = meter.Int64Counter("agenthost.tool.cache_hits", metric.WithDescription("Tool calls answered from the tool-result cache, by tool."))
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (m *instruments) run(ctx context.Context, res loop.RunResult, d time.Duration) {
	m.runs.Add(ctx, 1, metric.WithAttributes(attribute.String("status", string(res.Status)), attribute.String("reason", string(res.Reason))))
	m.runDuration.Record(ctx, d.Seconds(), metric.WithAttributes(attribute.String("status", string(res.Status))))
}

func (m *instruments) usage(ctx context.Context, u loop.Usage) {
	m.tokens.Add(ctx, int64(u.PromptTokens), metric.WithAttributes(attribute.String("type", "prompt")))
	m.tokens.Add(ctx, int64(u.CompletionTokens), metric.WithAttributes(attribute.String("type", "completion")))
	if u.CacheReadTokens > 0 { // part of the prompt's, read from the provider's prompt cache
		m.tokens.Add(ctx, int64(u.CacheReadTokens), metric.WithAttributes(attribute.String("type", "cache_read")))
	}
	if u.CostUSD > 0 {
		m.cost.Add(ctx, u.CostUSD)
	}
}

func (m *instruments) modelCall(ctx context.Context, provider, outcome string, timedOut bool) {
	m.modelCalls.Add(ctx, 1, metric.WithAttributes(attribute.String("provider", provider), attribute.String("outcome", outcome)))
	if timedOut {
		m.timeouts.Add(ctx, 1, metric.WithAttributes(attribute.String("where", "model")))
	}
}

func (m *instruments) tool(ctx context.Context, plugin, tool, outcome string, timedOut bool, d time.Duration) {
	attrs := metric.WithAttributes(attribute.String("plugin", plugin), attribute.String("tool", tool), attribute.String("outcome", outcome))
	m.toolCalls.Add(ctx, 1, attrs)
	m.toolDuration.Record(ctx, d.Seconds(), metric.WithAttributes(attribute.String("plugin", plugin), attribute.String("tool", tool)))
	if timedOut {
		m.timeouts.Add(ctx, 1, metric.WithAttributes(attribute.String("where", "tool")))
	}
}
