package telemetry

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agenthost/agenthost/loop"
)

// A call the cache answered is an execute_tool span marked cached, with its age.
func TestCacheHitIsAToolSpanMarkedCached(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tel, err := New(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	tel.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tel.tracer = tel.tp.Tracer("test")
	defer tel.Shutdown(context.Background())
	in := loop.RunInput{Messages: []loop.Message{loop.UserMessage("go")}}
	ctx, endRun := tel.StartRun(context.Background(), "agent", &in)
	CacheHit(ctx, "lookup", 2500*time.Millisecond)
	endRun(loop.RunResult{Status: loop.StatusCompleted})
	CacheHit(context.Background(), "outside", time.Second) // no run: nothing
	spans := rec.Ended()
	if len(spans) != 2 || spans[0].Name() != "execute_tool lookup" {
		t.Fatalf("spans %v", spans)
	}
	got := map[string]string{}
	for _, a := range spans[0].Attributes() {
		got[string(a.Key)] = a.Value.String()
	}
	if got["agenthost.tool.cached"] != "true" || got["agenthost.tool.cache_age_ms"] != "2500" || got["gen_ai.tool.name"] != "lookup" {
		t.Fatalf("attributes %v", got)
	}
}
