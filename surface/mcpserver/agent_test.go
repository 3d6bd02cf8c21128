package mcpserver

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testbin"
)

// agentHost opens a host whose agent lead (scripted model, the probe plugin's tools)
// can ask expert (ask_expert), offers lead as ask_lead (AddAgent), and serves it over
// Streamable HTTP.
func agentHost(t *testing.T, script string) string {
	t.Helper()
	buildPlugins(t)
	dir := t.TempDir()
	manifest := fmt.Sprintf(`[agent]
name = "lead"
provider = "scripted"
model = "m1"
[providers.scripted]
command = %q
options = { script = "script.json" }
[agents.expert]
as_tool = true
[store]
kind = "memory"
[[plugins]]
name = "probe"
wasm = %q
`, testbin.Path(t, testbin.Scripted), wasm.probe)
	for name, body := range map[string]string{"agent.toml": manifest, "script.json": script} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := host.Open(context.Background(), host.Options{Manifest: filepath.Join(dir, "agent.toml"), CacheDir: wasm.cache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	srv, skipped := New(h, "test")
	if len(skipped) > 0 {
		t.Fatalf("skipped %v", skipped)
	}
	AddAgent(srv, h)
	ts := httptest.NewServer(HTTPHandler(srv, HTTPOptions{}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// Under mcp serve, ask_AGENT tells a client that sent a progressToken what the run does
// while it works: each tool call it starts as a step (progress 1, 2, …, with "calling
// NAME", a nested run's prefixed with its path), then the text of its model's answer as
// result pieces (_meta["agenthost/result_delta"]) with the progress still rising; the
// nested run's own text is not a piece. The result is the final answer. A call without a
// token gets the result alone.
func TestMCPServeAskAgentForwardsItsRunsStepsAndTextAsProgress(t *testing.T) {
	turn := func(tools string) string {
		return `{"tool_calls": [` + tools + `]}`
	}
	asked := turn(`{"id": "q1", "name": "ask_expert", "arguments": "{\"question\": \"measure it\"}"}`) + `,` +
		turn(`{"id": "m1", "name": "measure", "arguments": "{}"}`) + `,` +
		`{"text": "It measures 42.", "chunk": 4},` +
		`{"text": "The expert says 42.", "chunk": 5}`
	url := agentHost(t, `{"per_session": false, "turns": [`+asked+`,`+asked+`]}`)
	var log progressLog
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{ProgressNotificationHandler: log.handle}).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	if got := streamCall(t, cs, "ask_lead", "", map[string]any{"question": "how much?"}); got != "The expert says 42." {
		t.Fatalf("ask_lead without a token: %q", got)
	}
	if got := streamCall(t, cs, "ask_lead", "a1", map[string]any{"question": "how much?"}); got != "The expert says 42." {
		t.Fatalf("ask_lead: %q", got)
	}
	log.await(t, "a1", 4)
	log.mu.Lock()
	var steps []string
	var values []float64
	for _, p := range log.got {
		if p.ProgressToken != "a1" {
			t.Errorf("a notification of token %v: %+v", p.ProgressToken, p)
		}
		values = append(values, p.Progress)
		if p.Message != "" {
			steps = append(steps, fmt.Sprintf("%g %s", p.Progress, p.Message))
		}
	}
	log.mu.Unlock()
	pieces, _ := log.of("a1")
	if strings.Join(pieces, "|") != "The e|xpert| says| 42." {
		t.Fatalf("pieces %q", pieces)
	}
	if want := "1 calling ask_expert|2 lead/expert: calling measure"; strings.Join(steps, "|") != want {
		t.Fatalf("steps %q, want %q", steps, want)
	}
	if len(values) != 6 {
		t.Fatalf("%d notifications (%v), want 2 steps and 4 pieces", len(values), values)
	}
	for i := 1; i < len(values); i++ {
		if values[i] <= values[i-1] || values[i] >= 2.001 {
			t.Fatalf("progress %v: each notification must raise it, a piece by nothing a progress bar shows", values)
		}
	}
}
