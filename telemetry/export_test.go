package telemetry

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// receiver is an OTLP/HTTP endpoint on loopback: it records the path of each request and
// decodes the trace exports it gets there; status is what it answers.
type receiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	paths    []string
	services []string
}

func newReceiver(t *testing.T, status int) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.paths = append(r.paths, req.URL.Path)
		if status != http.StatusOK {
			http.Error(w, "no", status)
			return
		}
		var ex collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &ex); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range ex.ResourceSpans {
			for _, a := range rs.Resource.Attributes {
				if a.Key == "service.name" {
					r.services = append(r.services, a.Value.GetStringValue())
				}
			}
		}
		b, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(b)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func noOTLPEnv(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_SDK_DISABLED"} {
		t.Setenv(k, "")
	}
}

// The manifest's otlp_endpoint is a base URL, as OTEL_EXPORTER_OTLP_ENDPOINT: spans are
// posted to its /v1/traces, under service.name agenthost.
func TestEndpointIsABaseURLSpansGoToV1TracesAsAgenthost(t *testing.T) {
	noOTLPEnv(t)
	for _, base := range []string{"", "/", "/v1/traces"} {
		r := newReceiver(t, http.StatusOK)
		tel, err := New(context.Background(), Options{Endpoint: r.srv.URL + base})
		if err != nil {
			t.Fatal(err)
		}
		_, span := tel.tracer.Start(context.Background(), "probe")
		span.End()
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Fatalf("endpoint %q: %v", r.srv.URL+base, err)
		}
		r.mu.Lock()
		if len(r.paths) != 1 || r.paths[0] != "/v1/traces" || len(r.services) != 1 || r.services[0] != "agenthost" {
			t.Errorf("endpoint %q: paths %q, service.name %q", r.srv.URL+base, r.paths, r.services)
		}
		r.mu.Unlock()
	}
	if got := tracesURL("https://otel.example.com/otlp/"); got != "https://otel.example.com/otlp/v1/traces" {
		t.Errorf("a base URL with a path: %s", got)
	}
}

// A receiver that refuses every export gives one warning naming where spans went and
// why, not a line per batch.
func TestFailedExportsAreOneWarning(t *testing.T) {
	noOTLPEnv(t)
	r := newReceiver(t, http.StatusNotFound)
	var warnings bytes.Buffer
	tel, err := New(context.Background(), Options{Endpoint: r.srv.URL, Warnings: &warnings})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_, span := tel.tracer.Start(context.Background(), "probe")
		span.End()
		tel.tp.ForceFlush(context.Background())
	}
	tel.Shutdown(context.Background())
	r.mu.Lock()
	exports := len(r.paths)
	r.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(warnings.String()), "\n")
	if exports < 3 || len(lines) != 1 || !strings.Contains(lines[0], "warning: telemetry: spans could not be exported to "+r.srv.URL+"/v1/traces") ||
		!strings.Contains(lines[0], "404") {
		t.Fatalf("%d exports gave warnings:\n%s", exports, warnings.String())
	}
}
