package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	promexp "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Options say where traces go and what they may contain.
type Options struct {
	// Endpoint is the OTLP endpoint (http://host:4318 for http/protobuf, host:4317 for
	// grpc). Empty: the OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
	// variables decide, and with neither set tracing is off.
	//
	// An http/protobuf Endpoint is a base URL, as OTEL_EXPORTER_OTLP_ENDPOINT is: spans go
	// to its path /v1/traces (a URL that already ends in /v1/traces is used as it is).
	Endpoint string
	// Protocol is "http/protobuf" (the default) or "grpc"; empty reads
	// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, then OTEL_EXPORTER_OTLP_PROTOCOL.
	Protocol string
	// CaptureContent records prompts, completions, tool arguments and results in spans.
	CaptureContent bool
	// Scrub, when set, is applied to every captured text before it reaches a span: the
	// [redact] guardrail's "telemetry" stage.
	Scrub func(string) string
	// Metrics builds the Prometheus handler (Handler); without it metrics are no-ops.
	Metrics bool
	// ServiceName is the resource's service.name; OTEL_SERVICE_NAME wins; default agenthost.
	ServiceName string
	// Warnings gets the one line that says spans could not be exported (default
	// os.Stderr); later failures are not reported.
	Warnings io.Writer
}

// Telemetry is a process's tracer and meters.
type Telemetry struct {
	tp      *sdktrace.TracerProvider // nil when tracing is off
	tracer  trace.Tracer
	mp      *sdkmetric.MeterProvider // nil when metrics are off
	handler http.Handler
	capture bool
	scrub   func(string) string // Options.Scrub
	m       instruments
}

// content is captured text as spans get it: scrubbed when Options.Scrub is set.
func (t *Telemetry) content(s string) string {
	if t.scrub != nil {
		return t.scrub(s)
	}
	return s
}

// Propagator reads and writes W3C trace context (traceparent, tracestate).
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// TracingConfigured reports whether opts or the environment ask for traces.
func TracingConfigured(opts Options) bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	return opts.Endpoint != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// New sets up tracing (when configured) and metrics (when asked for).
func New(ctx context.Context, opts Options) (*Telemetry, error) {
	t := &Telemetry{capture: opts.CaptureContent, scrub: opts.Scrub, tracer: tracenoop.NewTracerProvider().Tracer("agenthost")}
	name := opts.ServiceName
	if name == "" {
		name = "agenthost"
	}
	// Schemaless: resource.Default() carries the SDK's own semconv schema URL, and merging
	// a resource of another schema version fails, which used to leave service.name at
	// unknown_service.
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(name)))
	if err != nil {
		res = resource.Default()
	}
	if env, err := resource.New(ctx, resource.WithFromEnv()); err == nil { // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
		if merged, err := resource.Merge(res, env); err == nil {
			res = merged
		}
	}
	if TracingConfigured(opts) {
		exp, err := newExporter(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("telemetry: %w", err)
		}
		w := &warnOnce{w: opts.Warnings, where: exportTarget(opts)}
		if w.w == nil {
			w.w = os.Stderr
		}
		// The SDK hands export errors to the global handler, which logs one raw line per
		// failed batch; the exporter's errors stop at warnOnce, and what else the SDK
		// reports (a full queue) goes to it too.
		otel.SetErrorHandler(otel.ErrorHandlerFunc(w.warn))
		t.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(&quietExporter{SpanExporter: exp, warn: w.warn}), sdktrace.WithResource(res))
		t.tracer = t.tp.Tracer("github.com/agenthost/agenthost")
	}
	var meter metric.Meter = metricnoop.NewMeterProvider().Meter("agenthost")
	if opts.Metrics {
		reg := prometheus.NewRegistry()
		exp, err := promexp.New(promexp.WithRegisterer(reg), promexp.WithoutScopeInfo())
		if err != nil {
			return nil, fmt.Errorf("telemetry: prometheus: %w", err)
		}
		t.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res))
		meter = t.mp.Meter("github.com/agenthost/agenthost")
		t.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	}
	if err := t.m.init(meter); err != nil {
		return nil, fmt.Errorf("telemetry: metrics: %w", err)
	}
	return t, nil
}

func newExporter(ctx context.Context, opts Options) (sdktrace.SpanExporter, error) {
	proto := opts.Protocol
	if proto == "" {
		proto = firstEnv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch proto {
	case "", "http/protobuf":
		var o []otlptracehttp.Option
		if opts.Endpoint != "" {
			o = append(o, otlptracehttp.WithEndpointURL(tracesURL(opts.Endpoint)))
		}
		return otlptracehttp.New(ctx, o...)
	case "grpc":
		var o []otlptracegrpc.Option
		if opts.Endpoint != "" {
			o = append(o, otlptracegrpc.WithEndpointURL(opts.Endpoint))
		}
		return otlptracegrpc.New(ctx, o...)
	}
	return nil, fmt.Errorf("OTLP protocol %q: want http/protobuf or grpc", proto)
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// Tracing reports whether spans are exported.
func (t *Telemetry) Tracing() bool { return t != nil && t.tp != nil }

// Handler serves the metrics in Prometheus text (nil without Options.Metrics).
func (t *Telemetry) Handler() http.Handler {
	if t == nil {
		return nil
	}
	return t.handler
}

// Shutdown flushes what is buffered (spans wait in a batch) and stops the exporters.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	if t.tp != nil {
		errs = append(errs, t.tp.Shutdown(ctx))
	}
	if t.mp != nil {
		errs = append(errs, t.mp.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

type telKey struct{}

// FromContext returns the Telemetry of the run ctx belongs to, or nil.
func FromContext(ctx context.Context) *Telemetry {
	t, _ := ctx.Value(telKey{}).(*Telemetry)
	return t
}
