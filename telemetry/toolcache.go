package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/agenthost/loop"
)

const (
	attrToolCached   = attribute.Key("agenthost.tool.cached")
	attrToolCacheAge = attribute.Key("agenthost.tool.cache_age_ms")
)

// CacheHit records a tool call of the run ctx belongs to that the tool-result cache
// answered: the agenthost.tool.cache_hits counter, and an execute_tool span marked
// agenthost.tool.cached = true with the result's age (the tool did not run, so it has
// no span of its own). A no-op outside a traced run.
func CacheHit(ctx context.Context, tool string, age time.Duration) {
	t := FromContext(ctx)
	if t == nil {
		return
	}
	t.m.toolCache.Add(ctx, 1, metric.WithAttributes(attribute.String("tool", tool)))
	info, _ := loop.CallInfoFrom(ctx)
	_, span := t.tracer.Start(ctx, "execute_tool "+tool, trace.WithAttributes(attrOperation.String("execute_tool"),
		attrToolName.String(tool), attrToolCallID.String(info.CallID), attrToolCached.Bool(true), attrToolCacheAge.Int64(age.Milliseconds())))
	span.End()
}
