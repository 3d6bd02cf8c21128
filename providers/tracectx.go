package providers

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
)

// The host's trace continues in the adapter: Client.Stream puts the caller's W3C trace
// context (traceparent, tracestate) in the call's gRPC metadata, and Serve puts it back
// on the context an adapter's Stream receives, where an adapter that traces finds its
// parent span (propagation.TraceContext{}.Extract) and TraceParent reads it.

var traceContext = propagation.TraceContext{}

// metadataCarrier adapts gRPC metadata to the propagator.
type metadataCarrier metadata.MD

func (c metadataCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}
func (c metadataCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }
func (c metadataCarrier) Keys() []string {
	out := make([]string, 0, len(c))
	for k := range c {
		out = append(out, k)
	}
	return out
}

// withTraceMetadata adds ctx's trace context to the outgoing metadata.
// A context without a span (the host traces nothing) adds none, and costs no map.
func withTraceMetadata(ctx context.Context) context.Context {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	md := metadata.MD{}
	traceContext.Inject(ctx, metadataCarrier(md))
	if len(md) == 0 {
		return ctx
	}
	return metadata.NewOutgoingContext(ctx, md)
}

// fromTraceMetadata puts the incoming call's trace context on ctx.
func fromTraceMetadata(ctx context.Context) context.Context {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return ctx
	}
	return traceContext.Extract(ctx, metadataCarrier(md))
}

// TraceParent is the W3C traceparent of the host's call that ctx serves, or "" when
// the host does not trace it. For adapters: Serve has put it on the Stream context.
func TraceParent(ctx context.Context) string {
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	return c["traceparent"]
}
