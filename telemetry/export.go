package telemetry

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// tracesPath is where an OTLP/HTTP receiver takes spans, below its base URL.
const tracesPath = "/v1/traces"

// tracesURL is the URL spans are posted to for the manifest's otlp_endpoint: the base
// URL's path with /v1/traces appended, as the SDK does for OTEL_EXPORTER_OTLP_ENDPOINT.
// Given to the SDK as it was, "http://127.0.0.1:4318" posted to "/" and every receiver
// answered 404.
func tracesURL(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme == "" || strings.HasSuffix(u.Path, tracesPath) {
		return endpoint // the SDK reports what is wrong with it
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + tracesPath
	return u.String()
}

// exportTarget names where spans go, for the warning: the URL (http) or address (grpc).
func exportTarget(opts Options) string {
	grpc := opts.Protocol == "grpc" || opts.Protocol == "" && firstEnv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL") == "grpc"
	switch {
	case opts.Endpoint != "" && grpc:
		return opts.Endpoint
	case opts.Endpoint != "":
		return tracesURL(opts.Endpoint)
	case os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "":
		return os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	case grpc:
		return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	return tracesURL(os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
}

// warnOnce writes the first telemetry error as one warning and drops the rest: a
// receiver that is down fails every batch, and a line per batch buries the output of
// the command it observes.
type warnOnce struct {
	w     io.Writer
	where string
	once  sync.Once
}

func (o *warnOnce) warn(err error) {
	o.once.Do(func() {
		fmt.Fprintf(o.w, "agenthost: warning: telemetry: spans could not be exported to %s: %v (the run goes on; further export errors are not shown)\n",
			o.where, err)
	})
}

// quietExporter reports a failed export to warn instead of returning it to the batch
// processor, which would hand it to the global handler as well.
type quietExporter struct {
	sdktrace.SpanExporter
	warn func(error)
}

func (q *quietExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := q.SpanExporter.ExportSpans(ctx, spans); err != nil {
		q.warn(err)
	}
	return nil
}
