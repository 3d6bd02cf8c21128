package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const visitTS = `import { tool, kv, http, fs } from "agenthost";

tool({
  name: "visit",
  description: "Count a visit, fetch a URL and read the greeting file",
  inputSchema: { type: "object", properties: { url: { type: "string" } }, required: ["url"] },
  handler(a: { url: string }) {
    const n: number = Number(kv.get("visits") ?? "0") + 1;
    kv.set("visits", String(n));
    const r = http.fetch(a.url, { method: "POST", body: "visit " + n });
    return n + " " + r.status + " " + r.body + " " + fs.readFile("/data/greeting.txt");
  },
});
`

// A TypeScript tool served by `mcp serve` (stdio) keeps its KV across calls, reaches
// the loopback server its allowed_hosts names and no other, and reads its allowed_paths:
// the manifest's grants, enforced by the sandbox, seen by an MCP client.
func TestE2E_ATypeScriptToolWithKVAndHTTPAnswersOverMCPServe(t *testing.T) {
	if err := jsRuntimeBeside(); err != nil {
		t.Fatal(err)
	}
	var forbiddenHits atomic.Int32
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 64)
		n, _ := r.Body.Read(b)
		fmt.Fprintf(w, "%s:%s", r.Method, b[:n])
	}))
	defer allowed.Close()
	forbidden := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { forbiddenHits.Add(1) }))
	defer forbidden.Close()

	work := t.TempDir()
	os.MkdirAll(filepath.Join(work, "data"), 0o755)
	os.WriteFile(filepath.Join(work, "data", "greeting.txt"), []byte("hello"), 0o644)
	os.WriteFile(filepath.Join(work, "visit.ts"), []byte(visitTS), 0o644)
	manifest := filepath.Join(work, "agent.toml")
	os.WriteFile(manifest, []byte(fmt.Sprintf(`[store]
kind = "memory"
[[plugins]]
name = "visit"
js = "visit.ts"
[plugins.permissions]
kv = true
allowed_hosts = [%q]
allowed_paths = { "ro:data" = "/data" }
`, strings.TrimPrefix(allowed.URL, "http://"))), 0o644)

	ctx, cancel := context.WithTimeout(context.Background(), readyBound)
	defer cancel()
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", manifest, "mcp", "serve")
	cmd.Dir = work
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	call := func(url string) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "visit", Arguments: map[string]any{"url": url}})
		if err != nil || len(res.Content) == 0 {
			t.Fatalf("visit %s: %v %+v", url, err, res)
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	for i, want := range []string{"1 200 POST:visit 1 hello", "2 200 POST:visit 2 hello"} {
		if text, isErr := call(allowed.URL + "/x"); isErr || text != want {
			t.Fatalf("call %d = %q (isError %v), want %q", i, text, isErr, want)
		}
	}
	// The host refuses the request before any connection, and the refusal ends the call
	// (the handler cannot catch it), as for a Go plugin's http_request.
	text, isErr := call(forbidden.URL + "/")
	if want := `plugin "visit": call: host ` + strings.TrimPrefix(forbidden.URL, "http://") + " not in allowed_hosts"; !isErr || text != want {
		t.Fatalf("the forbidden host: %q (isError %v), want %q", text, isErr, want)
	}
	if n := forbiddenHits.Load(); n != 0 {
		t.Errorf("the forbidden server was reached %d times", n)
	}
	// The refused call still counted (its KV write came first): the store is the plugin's.
	if text, isErr := call(allowed.URL + "/x"); isErr || text != "4 200 POST:visit 4 hello" {
		t.Errorf("after the refusal = %q (isError %v)", text, isErr)
	}
}
