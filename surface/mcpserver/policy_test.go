package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testbin"
)

// The plugins these tests serve are real Wasm built from source: the host tests' probe
// (tools counter, echo_args, measure; and, loaded a second time, a permission hook that
// denies {"deny": true}) and the redact example guardrail.
var wasm struct {
	once         sync.Once
	probe, redac string
	cache        string
	err          error
}

func buildPlugins(t *testing.T) {
	t.Helper()
	wasm.once.Do(func() {
		dir, err := os.MkdirTemp("", "mcpserver-test-")
		if err != nil {
			wasm.err = err
			return
		}
		wasm.cache = testbin.ShareWasmCache()
		wasm.probe = filepath.Join(dir, "probe.wasm")
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", wasm.probe, "../../host/testdata/probe")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if out, err := cmd.CombinedOutput(); err != nil {
			wasm.err = fmt.Errorf("build probe: %v\n%s", err, out)
			return
		}
		root, _ := filepath.Abs("../..")
		wasm.redac = filepath.Join(root, "plugins/examples/go/redact/redact.wasm")
		if _, err := os.Stat(wasm.redac); err != nil {
			cmd := exec.Command("bash", "scripts/plugins.d/examples.sh", "redact")
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				wasm.err = fmt.Errorf("build redact: %v\n%s", err, out)
			}
		}
	})
	if wasm.err != nil {
		t.Fatal(wasm.err)
	}
}

// policyHost opens a host with no provider (as `mcp serve` does) whose agent needs
// approval for measure, and serves it over MCP.
func policyHost(t *testing.T, agentKeys string) *mcp.Server {
	t.Helper()
	buildPlugins(t)
	dir := t.TempDir()
	manifest := fmt.Sprintf(`[agent]
name = "a"
%s
[store]
kind = "memory"
[[plugins]]
name = "probe"
wasm = %q
[[plugins]]
name = "gate"
kind = "permission"
wasm = %q
[[plugins]]
name = "redact"
kind = "guardrail"
wasm = %q
`, agentKeys, wasm.probe, wasm.probe, wasm.redac)
	p := filepath.Join(dir, "agent.toml")
	if err := os.WriteFile(p, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := host.Open(context.Background(), host.Options{Manifest: p, NoProvider: true, CacheDir: wasm.cache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	srv, skipped := New(h, "test")
	if len(skipped) > 0 {
		t.Fatalf("skipped %v", skipped)
	}
	return srv
}

// connect opens an in-memory client session; elicit, when set, answers approvals.
func connect(t *testing.T, srv *mcp.Server, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	opts := &mcp.ClientOptions{}
	if elicit != nil {
		opts.ElicitationHandler = elicit
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callText(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// require_approval holds over MCP: a client that cannot ask its user is refused with a
// clear error; one that can is asked (elicitation), and its user's answer decides.
func TestL22_MCPServeAsksApprovalThroughElicitation(t *testing.T) {
	srv := policyHost(t, `tool_policy = { require_approval = ["measure"] }`)
	if text, isErr := callText(t, connect(t, srv, nil), "measure", nil); !isErr ||
		text != "Error: tool call rejected: approval required, and this MCP client cannot ask its user (it does not support elicitation)" {
		t.Fatalf("without elicitation: %q (error %v)", text, isErr)
	}
	var asked []string
	answer := "accept"
	cs := connect(t, srv, func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		return &mcp.ElicitResult{Action: answer, Content: map[string]any{"approve": true}}, nil
	})
	if text, isErr := callText(t, cs, "measure", nil); isErr || text != `{"cm":180}` {
		t.Fatalf("approved: %q (error %v)", text, isErr)
	}
	answer = "decline"
	if text, isErr := callText(t, cs, "measure", nil); !isErr || text != "Error: tool call rejected: the MCP client's user did not approve (decline)" {
		t.Fatalf("declined: %q (error %v)", text, isErr)
	}
	if len(asked) != 2 || !strings.Contains(asked[0], "The tool measure needs your approval") {
		t.Fatalf("the user was asked %q", asked)
	}
	// A tool the policy does not list runs without asking.
	if text, isErr := callText(t, cs, "counter", nil); isErr || text != "1" || len(asked) != 2 {
		t.Fatalf("counter: %q (error %v), asked %d times", text, isErr, len(asked))
	}
}

// approval_default = "deny", permission plugins and guardrails hold over MCP as they do
// for a model's call.
func TestL22_MCPServeHonoursPermissionPluginsGuardrailsAndApprovalDefault(t *testing.T) {
	srv := policyHost(t, "")
	cs := connect(t, srv, nil)
	text, isErr := callText(t, cs, "echo_args", map[string]any{"deny": true})
	if !isErr || !strings.HasPrefix(text, "Error: permission denied for tool 'echo_args': echo_args may not run in mcp-") {
		t.Fatalf("denied by the permission plugin: %q (error %v)", text, isErr)
	}
	text, isErr = callText(t, cs, "echo_args", map[string]any{"note": "write to ann@example.com"})
	if isErr || strings.Contains(text, "ann@example.com") || !strings.Contains(text, "[redacted email]") {
		t.Fatalf("the tool_result guardrail did not redact: %q (error %v)", text, isErr)
	}
	deny := policyHost(t, `tool_policy = { approval_default = "deny" }`)
	if text, isErr := callText(t, connect(t, deny, nil), "counter", nil); !isErr ||
		text != "Error: permission denied for tool 'counter': approval_default is deny" {
		t.Fatalf("approval_default deny: %q (error %v)", text, isErr)
	}
}

// Over Streamable HTTP each MCP session is a session of its own: instances of a plugin
// with isolation "session" are not shared between two clients (the probe's counter
// starts at 1 for each), and each session's calls are stored under mcp-ID.
func TestMCPServeHTTPIsolatesSessionsByMCPSessionID(t *testing.T) {
	srv := policyHost(t, "")
	ts := httptest.NewServer(HTTPHandler(srv, HTTPOptions{}))
	defer ts.Close()
	ctx := context.Background()
	var sessions []*mcp.ClientSession
	for range 2 {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		sessions = append(sessions, cs)
	}
	for _, want := range []string{"1", "2"} {
		for i, cs := range sessions {
			if text, _ := callText(t, cs, "counter", nil); text != want {
				t.Fatalf("client %d: counter %q, want %q (a session saw another one's instance)", i, text, want)
			}
		}
	}
	if sessions[0].ID() == sessions[1].ID() || sessions[0].ID() == "" {
		t.Fatalf("session ids %q %q", sessions[0].ID(), sessions[1].ID())
	}
}

// Over HTTP the sessions are capped in number (503 past the cap, until one ends) and
// dropped when idle (the client's next request finds its session gone).
func TestMCPServeHTTPCapsAndExpiresSessions(t *testing.T) {
	srv := policyHost(t, "")
	// 2 s idle: the cap is checked while the first session is still live, which 300 ms
	// did not promise between two requests on a loaded machine under -race.
	ts := httptest.NewServer(HTTPHandler(srv, HTTPOptions{MaxSessions: 1, IdleTimeout: 2 * time.Second}))
	defer ts.Close()
	ctx := context.Background()
	first, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	initialize := func() int {
		req, _ := http.NewRequest("POST", ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := initialize(); code != http.StatusServiceUnavailable {
		t.Fatalf("a second session past the cap: status %d, want 503", code)
	}
	// Idle past the timeout, the first session is dropped: room for a new one.
	deadline := time.Now().Add(30 * time.Second)
	for initialize() != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("the idle session was never dropped")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Over MCP elicitation the form asks for the scope of a yes (once, session, user and
// hours); a user's "session" is a grant: the next call of the tool in that MCP session
// runs without asking.
func TestMCPElicitationAnswerForTheSessionIsAGrant(t *testing.T) {
	srv := policyHost(t, `tool_policy = { require_approval = ["measure"] }`)
	var asked int
	var schema string
	elicit := func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked++
		b, _ := json.Marshal(req.Params.RequestedSchema)
		schema = string(b)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "scope": "session"}}, nil
	}
	cs := connect(t, srv, elicit)
	for i := 0; i < 2; i++ {
		if text, isErr := callText(t, cs, "measure", nil); isErr || text != `{"cm":180}` {
			t.Fatalf("call %d: %q (error %v)", i, text, isErr)
		}
	}
	if asked != 1 {
		t.Fatalf("asked %d times, want once: the session grant answers the second call", asked)
	}
	for _, want := range []string{`"scope":{"default":"once","description":`, `"enum":["once","session","user"]`, `"hours":{"maximum":8784,"minimum":0,"title":"Hours (scope user)","type":"number"}`} {
		if !strings.Contains(schema, want) {
			t.Errorf("the form %s lacks %s", schema, want)
		}
	}
}
