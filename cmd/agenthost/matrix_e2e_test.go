package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/store/pgtest"
)

// matrixEnv is the surface matrix's one setup: a manifest on a fresh PostgreSQL
// database whose model answers with a phone number, whose http_get fetches one (from
// secret), with calc needing approval, [redact] on phone numbers, an MCP server that
// asks for sampling, the workflows "door" (a tool step, then a prompt step) and "gate"
// (a tool step, an approval, a prompt step); the users ana and bo (user) and root
// (admin); `serve`, `serve --workers 1` (cluster) and `mcp serve --http` on it.
type matrixEnv struct {
	e                     *agentEnv
	recv                  *otlpReceiver
	srv, cluster, mcpHTTP *served
	tok, id               map[string]string
	secret                string // a URL whose body holds a phone number
}

// matrixModel: every turn costs 7 tokens; "approve" asks for calc (which needs
// approval), "sample" for the MCP server's sampling, "say hi" is that sampling, "hi"
// any other run.
const matrixModel = `{"stories": [
  {"when": "approve", "turns": [
    {"usage": {"prompt_tokens": 5, "completion_tokens": 2}, "tool_calls": [{"id": "a1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]},
    {"usage": {"prompt_tokens": 5, "completion_tokens": 2}, "text": "it is {{result a1}}; call +1 415 555 0100"}]},
  {"when": "sample", "turns": [
    {"usage": {"prompt_tokens": 5, "completion_tokens": 2}, "tool_calls": [{"id": "c1", "name": "trigger-sampling-request", "arguments": "{\"prompt\":\"say hi\",\"maxTokens\":50}"}]},
    {"usage": {"prompt_tokens": 5, "completion_tokens": 2}, "text": "{{result c1}}"}]},
  {"when": "say hi", "turns": [{"usage": {"prompt_tokens": 5, "completion_tokens": 2}, "text": "hi, call +1 415 555 0100"}]},
  {"when": "hi", "turns": [{"usage": {"prompt_tokens": 5, "completion_tokens": 2}, "text": "ok, call +1 415 555 0100"}]}]}`

func newMatrixEnv(t *testing.T) *matrixEnv {
	t.Helper()
	m := &matrixEnv{recv: newOTLPReceiver(t), tok: map[string]string{}, id: map[string]string{}}
	secret := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "reach ana at +1 415 555 0100")
	}))
	t.Cleanup(secret.Close)
	m.secret = secret.URL + "/card"
	t.Setenv("AGENTHOST_TEST_PG", pgtest.Start(t).NewDatabase(t))
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100") // serve's spans reach the receiver soon
	build := exec.Command("bash", "scripts/plugins.d/examples.sh", "http_get")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build examples: %v\n%s", err, out)
	}
	m.e = newEnv(t, "", `require_approval = ["calc"]`, [2]string{"scripted", matrixModel})
	b, _ := os.ReadFile(m.e.manifest)
	manifest := strings.Replace(string(b), "kind = \"sqlite\"\npath = \"sessions.db\"", "kind = \"postgres\"\nurl = \"${AGENTHOST_TEST_PG}\"", 1)
	manifest += examplePlugin("http_get", "tool", "[plugins.permissions]\nallowed_hosts = [\"127.0.0.1\"]\ntimeout = \"60s\"")
	manifest += fmt.Sprintf("\n[[mcp_servers]]\nname = \"everything\"\ncommand = [\"node\", %q]\ntools = [\"trigger-sampling-request\"]\nsampling = true\n",
		filepath.Join(npmMCP(t), "node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
	manifest += fmt.Sprintf(`
[redact]
kinds = ["phone"]

[workflows.door]
[[workflows.door.steps]]
id = "fetch"
tool = "http_get"
arguments = { url = %[1]q }
[[workflows.door.steps]]
id = "ask"
prompt = "hi from the workflow"
depends_on = ["fetch"]

[workflows.gate]
[[workflows.gate.steps]]
id = "fetch"
tool = "http_get"
arguments = { url = %[1]q }
output = "fetched"
[[workflows.gate.steps]]
id = "ok"
approval = "Go on?"
depends_on = ["fetch"]
[[workflows.gate.steps]]
id = "ask"
prompt = "hi from the gate"
depends_on = ["ok"]
output = "note"
`, m.secret)
	if err := os.WriteFile(m.e.manifest, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	m.e.withTelemetry(t, m.recv.srv.URL)
	for _, u := range [][2]string{{"ana", "user"}, {"bo", "user"}, {"root", "admin"}} {
		r := m.e.agenthost(t, "users", "add", u[0], "--role", u[1])
		if r.code != 0 {
			t.Fatalf("users add %s: %d %s", u[0], r.code, r.stderr)
		}
		m.tok[u[0]] = strings.TrimSpace(r.stdout)
	}
	m.srv = m.e.serve(t)
	m.cluster = m.e.serve(t, "--workers", "1")
	m.mcpHTTP = m.e.serveArgs(t, "mcp", "serve", "--http", "127.0.0.1:0")
	for u, tok := range m.tok {
		m.id[u] = whoami(t, m.srv, tok).ID
	}
	return m
}

// matrixSurface is a row of the matrix.
type matrixSurface struct {
	name   string
	before func(t *testing.T)        // what the entry needs first (not part of its cells)
	enter  func(t *testing.T) string // the entry, for ana unless said; what reached its wire
	user   string                    // the audit actor (the run's user); "": the entry starts no run
	by     string                    // the principal's id: the audit detail's actor_id, the span's enduser.id
	tokens string                    // what the model calls cost, on a run end; "": no model call
	secret bool                      // the wire carries something the model or a tool said
	noRun  string                    // why no run cell
	// foreign is bo on ana's object; nil: why says why not.
	foreign func(t *testing.T)
	why     string
}

func (m *matrixEnv) httpMCP(token string) mcp.Transport {
	return &mcp.StreamableClientTransport{Endpoint: m.mcpHTTP.base + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}}}
}

// refusedLikeUnknown asserts that bo's request on ana's object got a 404 that tells
// nothing of it, exactly as the same request on an object that does not exist.
func refusedLikeUnknown(t *testing.T, what string, code int, body, unknown, id, unknownID string) {
	t.Helper()
	if code != 404 || strings.ReplaceAll(body, id, unknownID) != unknown || strings.Contains(body, "[phone]") {
		t.Fatalf("bo %s: %d %s (an unknown one: %s)", what, code, body, unknown)
	}
}

// foreignMCPSession: bo's request in ana's MCP session (its id, with his own token) is
// refused, and her session goes on.
func (m *matrixEnv) foreignMCPSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), readyBound)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "matrix", Version: "1"}, nil).Connect(ctx, m.httpMCP(m.tok["ana"]), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"http_get","arguments":{"url":"` + m.secret + `"}}}`
	req, _ := http.NewRequest("POST", m.mcpHTTP.base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Authorization", "Bearer "+m.tok["bo"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if (resp.StatusCode != 403 && resp.StatusCode != 404) || strings.Contains(string(got), "phone") {
		t.Fatalf("bo in ana's MCP session: %d %s", resp.StatusCode, got)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "http_get", Arguments: map[string]any{"url": m.secret}})
	if err != nil || res.IsError {
		t.Fatalf("ana's session after bo's request: %v %+v", err, res)
	}
}
