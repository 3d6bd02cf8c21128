package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// withTelemetry appends a [telemetry] table to the env's manifest.
func (e *agentEnv) withTelemetry(t *testing.T, endpoint string) {
	t.Helper()
	f, err := os.OpenFile(e.manifest, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "\n[telemetry]\notlp_endpoint = %q\n", endpoint)
	f.Close()
}

// runNoOTELEnv runs agenthost with no OTEL_* variable, so the manifest alone says where
// spans go.
func (e *agentEnv) runNoOTELEnv(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), append([]string{"-c", e.manifest}, args...)...)
	cmd.Dir = e.dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// otlp_endpoint = "http://HOST:4318", as the README writes it, is a base URL: a real
// OTLP/HTTP receiver (which answers only /v1/traces) gets the run's spans, under
// service.name agenthost, and a chat span records no max_tokens when none was set.
func TestE2E_OTLPEndpointFromTheManifestIsABaseURL(t *testing.T) {
	recv := newOTLPReceiver(t)
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "hi"}]}`})
	e.withTelemetry(t, recv.srv.URL)
	if out, stderr, err := e.runNoOTELEnv(t, "run", "hello"); err != nil || strings.Contains(stderr, "telemetry") {
		t.Fatalf("run: %v\n%s\n%s", err, out, stderr)
	}
	chats := recv.named("chat ")
	if len(recv.named("invoke_agent ")) != 1 || len(chats) != 1 {
		t.Fatalf("spans at the receiver: %d", len(recv.spans))
	}
	for _, a := range chats[0].Attributes {
		if a.Key == "gen_ai.request.max_tokens" {
			t.Errorf("chat span records max_tokens %v, which was never set", a.Value)
		}
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	for _, s := range recv.services {
		if s != "agenthost" {
			t.Fatalf("service.name %q, want agenthost", s)
		}
	}
	if len(recv.services) == 0 {
		t.Fatal("no export carried service.name")
	}
}

// A receiver that refuses the export costs the run nothing and prints one warning that
// says where the spans went and what came back.
func TestE2E_OTLPExportFailureIsOneClearWarning(t *testing.T) {
	refuse := httptest.NewServer(http.NotFoundHandler())
	defer refuse.Close()
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "hi"}]}`})
	e.withTelemetry(t, refuse.URL)
	out, stderr, err := e.runNoOTELEnv(t, "run", "hello")
	if err != nil || !strings.Contains(out, "hi") {
		t.Fatalf("run: %v\n%s\n%s", err, out, stderr)
	}
	var warnings []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "export") || strings.Contains(l, "404") {
			warnings = append(warnings, l)
		}
	}
	want := "agenthost: warning: telemetry: spans could not be exported to " + refuse.URL + "/v1/traces"
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0], want) || !strings.Contains(warnings[0], "404") {
		t.Fatalf("stderr lines about the export %q, want one starting %q", warnings, want)
	}
}
