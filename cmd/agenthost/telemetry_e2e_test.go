package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/agenthost/agenthost/loop"
)

// otlpReceiver is an OTLP/HTTP trace endpoint: it decodes each export (protobuf) and
// keeps the spans.
type otlpReceiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	spans    []*tracepb.Span
	services []string // each export's resource service.name
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var ex collectortrace.ExportTraceServiceRequest
		if req.URL.Path != "/v1/traces" || proto.Unmarshal(body, &ex) != nil {
			http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range ex.ResourceSpans {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					r.services = append(r.services, a.Value.GetStringValue())
				}
			}
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Write(b)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *otlpReceiver) named(prefix string) []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range r.spans {
		if strings.HasPrefix(s.Name, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// allJSON waits until at least n spans named prefix have arrived, then returns every
// span received as protojson text: what a test searches for bytes that must not leak.
func (r *otlpReceiver) allJSON(t *testing.T, prefix string, n int) string {
	t.Helper()
	for deadline := time.Now().Add(readyBound); len(r.named(prefix)) < n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d %q spans arrived, want %d", len(r.named(prefix)), prefix, n)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, sp := range r.spans {
		j, _ := protojson.Marshal(sp)
		b.Write(j)
	}
	return b.String()
}

func attr(s *tracepb.Span, key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			v := a.Value
			switch {
			case v.GetStringValue() != "":
				return v.GetStringValue()
			case v.GetArrayValue() != nil:
				var parts []string
				for _, e := range v.GetArrayValue().Values {
					parts = append(parts, e.GetStringValue())
				}
				return strings.Join(parts, ",")
			default:
				return fmt.Sprint(v.GetIntValue())
			}
		}
	}
	return ""
}

// A scripted run with a retry, a tool call and a guardrail, through the binary, exports
// the GenAI span tree to a real OTLP/HTTP endpoint; its events carry the trace id; the
// provider subprocess receives the chat span as its parent.
func TestE2E_TracesOfARunReachAnOTLPEndpoint(t *testing.T) {
	recv := newOTLPReceiver(t)
	build := exec.Command("bash", "scripts/plugins.d/examples.sh", "calc", "redact")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build examples: %v\n%s", err, out)
	}
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [
	  {"error": {"kind": "rate_limit", "message": "slow down", "retry_after_ms": 5}},
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]},
	  {"text": "{{result c1}} via {{traceparent}}"}]}`})
	f, _ := os.OpenFile(e.manifest, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "\n[[plugins]]\nname = \"redact\"\nkind = \"guardrail\"\nwasm = %q\n", filepath.Join(repoRoot, "plugins/examples/go/redact/redact.wasm"))
	f.Close()

	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", e.manifest, "run", "--json", "what is 6*7?")
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.srv.URL)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	evs := events(t, string(out))

	roots := recv.named("invoke_agent ")
	if len(roots) != 1 || len(roots[0].ParentSpanId) != 0 {
		t.Fatalf("invoke_agent spans: %d", len(roots))
	}
	root := roots[0]
	traceID := hex.EncodeToString(root.TraceId)
	if attr(root, "gen_ai.operation.name") != "invoke_agent" || attr(root, "gen_ai.agent.name") != "e2e" ||
		attr(root, "gen_ai.conversation.id") != evs[0].SessionID || attr(root, "agenthost.run.status") != "completed" {
		t.Fatalf("invoke_agent attributes %v", root.Attributes)
	}
	childOf := func(s *tracepb.Span, parent *tracepb.Span) bool {
		return hex.EncodeToString(s.TraceId) == traceID && string(s.ParentSpanId) == string(parent.SpanId)
	}
	chats := recv.named("chat ")
	if len(chats) != 2 {
		t.Fatalf("%d chat spans, want one per model call (2)", len(chats))
	}
	var retried, second *tracepb.Span
	for _, c := range chats {
		if !childOf(c, root) || attr(c, "gen_ai.provider.name") != "scripted" || attr(c, "gen_ai.request.model") != "demo" {
			t.Fatalf("chat span %s: parent or attributes wrong: %v", c.Name, c.Attributes)
		}
		if attr(c, "agenthost.call_index") == "1" {
			retried = c
		} else {
			second = c
		}
	}
	if retried == nil || len(retried.Events) != 1 || retried.Events[0].Name != "gen_ai.retry" ||
		attr(&tracepb.Span{Attributes: retried.Events[0].Attributes}, "error.type") != "rate_limit" {
		t.Fatalf("the first call's retry is not an event of its span: %v", retried)
	}
	if attr(retried, "gen_ai.response.finish_reasons") != "tool_use" || attr(second, "gen_ai.response.finish_reasons") != "end_turn" {
		t.Fatalf("finish reasons %q %q", attr(retried, "gen_ai.response.finish_reasons"), attr(second, "gen_ai.response.finish_reasons"))
	}
	if attr(retried, "gen_ai.input.messages") != "" {
		t.Fatal("content recorded without capture_content")
	}
	tools := recv.named("execute_tool ")
	if len(tools) != 1 || !childOf(tools[0], root) || attr(tools[0], "gen_ai.tool.name") != "calc" ||
		attr(tools[0], "gen_ai.tool.call.id") != "c1" || attr(tools[0], "agenthost.plugin") != "calc" {
		t.Fatalf("execute_tool spans %v", tools)
	}
	guards := recv.named("guardrail redact")
	if len(guards) == 0 || !childOf(guards[0], root) {
		t.Fatalf("guardrail spans: %d", len(guards))
	}
	if loads := recv.named("sandbox.load "); len(loads) != 2 {
		t.Fatalf("%d sandbox.load spans, want 2", len(loads))
	}
	for _, ev := range evs {
		if ev.TraceID != traceID {
			t.Fatalf("event %d (%s) has trace_id %q, want %s", ev.Seq, ev.Type, ev.TraceID, traceID)
		}
	}
	final := "" // the model's own text: the redact guardrail may take a trace id for a phone number
	for _, ev := range evs {
		if d, ok := ev.Data.(*loop.AssistantMessageData); ok {
			final = d.Message.Text()
		}
	}
	if want := fmt.Sprintf("42 via 00-%s-%s-01", traceID, hex.EncodeToString(second.SpanId)); final != want {
		t.Fatalf("the provider saw traceparent %q, want %q", final, want)
	}
}

// grpcReceiver is an OTLP/gRPC trace endpoint.
type grpcReceiver struct {
	collectortrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (g *grpcReceiver) Export(_ context.Context, ex *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, rs := range ex.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			g.spans = append(g.spans, ss.Spans...)
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// [telemetry] in the manifest selects the endpoint and the protocol (here OTLP/gRPC), and
// capture_content puts the prompt and the tool's arguments and result in the spans.
func TestE2E_TelemetryTableGRPCAndCapturedContent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	recv := &grpcReceiver{}
	gs := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(gs, recv)
	go gs.Serve(ln)
	defer gs.Stop()

	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]},
	  {"text": "{{result c1}}"}]}`})
	f, _ := os.OpenFile(e.manifest, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "\n[telemetry]\notlp_endpoint = \"http://%s\"\nprotocol = \"grpc\"\ncapture_content = true\n", ln.Addr())
	f.Close()
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", e.manifest, "run", "what is 6*7?")
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_INSECURE=true")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	var chat, tool *tracepb.Span
	for _, s := range recv.spans {
		switch {
		case strings.HasPrefix(s.Name, "chat ") && chat == nil:
			chat = s
		case strings.HasPrefix(s.Name, "execute_tool "):
			tool = s
		}
	}
	if chat == nil || !strings.Contains(attr(chat, "gen_ai.input.messages"), "what is 6*7?") {
		t.Fatalf("chat span without the captured prompt: %v", chat)
	}
	if tool == nil || attr(tool, "gen_ai.tool.call.arguments") != `{"expression":"6*7"}` || attr(tool, "gen_ai.tool.call.result") != "42" {
		t.Fatalf("tool span without captured content: %v", tool)
	}
}

// A traced run's call of an MCP server's tool carries the trace in its _meta.
func TestE2E_TraceContinuesIntoMCPServers(t *testing.T) {
	recv := newOTLPReceiver(t)
	echo := buildMCPEcho(t)
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "trace", "arguments": "{}"}]}, {"text": "ok"}]}`})
	f, _ := os.OpenFile(e.manifest, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "\n[[mcp_servers]]\nname = \"echoes\"\ncommand = [%q]\ntools = [\"trace\"]\n", echo)
	f.Close()
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", e.manifest, "run", "--json", "go")
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.srv.URL)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	var result string
	for _, ev := range events(t, string(out)) {
		if d, ok := ev.Data.(*loop.ToolResultData); ok {
			result = d.Content
		}
	}
	tools := recv.named("execute_tool trace")
	if len(tools) != 1 {
		t.Fatalf("%d execute_tool spans", len(tools))
	}
	want := fmt.Sprintf("traceparent=00-%s-%s-01", hex.EncodeToString(tools[0].TraceId), hex.EncodeToString(tools[0].SpanId))
	if result != want || attr(tools[0], "agenthost.plugin") != "mcp:echoes" {
		t.Fatalf("the MCP server saw %q, want %q", result, want)
	}
}
