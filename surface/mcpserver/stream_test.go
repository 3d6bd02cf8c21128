package mcpserver

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/mcpclient"
)

// streamTS is a TypeScript tool that streams its result (streamResult), bundled by the
// host (jsbundle) and run by the JS runtime plugin; flood and odd are hostile streamers.
const streamTS = `import { tool, streamResult, progress } from "agenthost";

tool({
  name: "scan",
  inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  handler(a: { text: string }) {
    const hits: string[] = a.text.match(/[0-9]+/g) ?? [];
    progress(1, 2, "scanning");
    for (const h of hits) {
      streamResult(h + "\n");
    }
    return hits.join("\n") + "\n";
  },
});

tool({
  name: "flood",
  handler() {
    let all = "";
    for (let i = 0; i < 1500; i++) {
      streamResult(i + ",");
      all += i + ",";
    }
    return all;
  },
});

tool({
  name: "odd",
  handler() {
    streamResult("a\uD800b");
    streamResult("x".repeat(9000));
    return "done";
  },
});
`

var streamWasm struct {
	once          sync.Once
	runtime, text string
	err           error
}

// streamHost opens a host with no provider (as mcp serve does) whose plugins are the
// TypeScript tool above and the text example (regex_extract streams through
// sdk.StreamResult), both built by the project's own scripts, and serves it over
// Streamable HTTP.
func streamHost(t *testing.T) (*host.Host, string) {
	t.Helper()
	buildPlugins(t)
	streamWasm.once.Do(func() {
		root, _ := filepath.Abs("../..")
		for _, script := range [][]string{{"scripts/plugins.d/jsruntime.sh"}, {"scripts/plugins.d/examples.sh", "text"}} {
			cmd := exec.Command("bash", script...)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				streamWasm.err = fmt.Errorf("%s: %v\n%s", script[0], err, out)
				return
			}
		}
		streamWasm.runtime = filepath.Join(root, "plugins/jsruntime/jsruntime.wasm")
		streamWasm.text = filepath.Join(root, "plugins/examples/go/text/text.wasm")
	})
	if streamWasm.err != nil {
		t.Fatal(streamWasm.err)
	}
	dir := t.TempDir()
	manifest := fmt.Sprintf(`[agent]
name = "a"
[store]
kind = "memory"
[[plugins]]
name = "stream"
js = "stream.ts"
wasm = %q
[plugins.permissions]
timeout = "60s" # the runtime's first instance is slow under -race on a loaded machine
[[plugins]]
name = "text"
wasm = %q
`, streamWasm.runtime, streamWasm.text)
	for name, body := range map[string]string{"agent.toml": manifest, "stream.ts": streamTS} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := host.Open(context.Background(), host.Options{Manifest: filepath.Join(dir, "agent.toml"), NoProvider: true, CacheDir: wasm.cache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	srv, skipped := New(h, "test")
	if len(skipped) > 0 {
		t.Fatalf("skipped %v", skipped)
	}
	ts := httptest.NewServer(HTTPHandler(srv, HTTPOptions{}))
	t.Cleanup(ts.Close)
	return h, ts.URL
}

// progressLog records the progress notifications a client receives, in order.
type progressLog struct {
	mu  sync.Mutex
	got []*mcp.ProgressNotificationParams
}

func (l *progressLog) handle(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, req.Params)
}

// of returns the notifications of token: the pieces (the text each carries under
// mcpclient.MetaResultDelta) and every progress value, in the order they came.
func (l *progressLog) of(token string) (pieces []string, values []float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.got {
		if p.ProgressToken != token {
			continue
		}
		values = append(values, p.Progress)
		if d, ok := p.Meta[mcpclient.MetaResultDelta].(string); ok {
			pieces = append(pieces, d)
		}
	}
	return pieces, values
}

// await polls until token has n pieces; the client handles notifications in order, on
// a goroutine of its own, so the last may follow the call's result by a moment.
func (l *progressLog) await(t *testing.T, token string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if pieces, _ := l.of(token); len(pieces) >= n {
			return
		}
		if time.Now().After(deadline) {
			pieces, _ := l.of(token)
			t.Fatalf("token %s: %d pieces after 30 s, want %d", token, len(pieces), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// call calls name with a progress token ("" for none) and returns its text.
func streamCall(t *testing.T, cs *mcp.ClientSession, name, token string, args map[string]any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := &mcp.CallToolParams{Name: name, Arguments: args}
	if token != "" {
		p.SetProgressToken(token)
	}
	res, err := cs.CallTool(ctx, p)
	if err != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("%s: %+v, %v", name, res, err)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// Under mcp serve, a tool's streamed pieces reach the MCP client that sent a
// progressToken as progress notifications carrying each piece in
// _meta["agenthost/result_delta"] (the key agenthost's own client reads), in order and
// with progress still rising, and the call's result is the whole result, stored whole in
// the MCP session's session. That holds for a TypeScript tool (streamResult) and a Go
// Wasm tool (sdk.StreamResult). A client that sent no token gets the result alone.
func TestMCPServeStreamsAToolsResultPiecesAsProgressThenTheWholeResult(t *testing.T) {
	h, url := streamHost(t)
	var log progressLog
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{ProgressNotificationHandler: log.handle}).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	if got := streamCall(t, cs, "scan", "", map[string]any{"text": "a1 b22"}); got != "1\n22\n" {
		t.Fatalf("scan without a token: %q", got)
	}
	if got := streamCall(t, cs, "scan", "t1", map[string]any{"text": "a1 b22 c333"}); got != "1\n22\n333\n" {
		t.Fatalf("scan: %q", got)
	}
	log.await(t, "t1", 3)
	pieces, values := log.of("t1")
	if strings.Join(pieces, "|") != "1\n|22\n|333\n" || len(values) != 4 || values[0] != 1 {
		t.Fatalf("scan's notifications: pieces %q, progress %v", pieces, values)
	}
	for i := 1; i < len(values); i++ {
		if values[i] <= values[i-1] || values[i] >= 1.001 {
			t.Fatalf("progress %v: each piece must raise it, by nothing a progress bar shows", values)
		}
	}
	if got := streamCall(t, cs, "regex_extract", "t2", map[string]any{"text": "x7 y88", "pattern": "[0-9]+"}); got != `["7","88"]` {
		t.Fatalf("regex_extract: %q", got)
	}
	log.await(t, "t2", 2)
	if pieces, _ := log.of("t2"); strings.Join(pieces, "|") != "7\n|88\n" {
		t.Fatalf("regex_extract's pieces %q", pieces)
	}
	// Notifications are handled in order: once t2's arrived, any of the call without a
	// token would have too.
	log.mu.Lock()
	n := len(log.got)
	log.mu.Unlock()
	if n != 6 {
		t.Fatalf("%d notifications, want 6 (4 of t1, 2 of t2; none for the call without a token)", n)
	}

	var stored []string
	entries, err := h.Store.Load(context.Background(), "mcp-"+cs.ID())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Event == nil {
			continue
		}
		switch d := e.Event.Data.(type) {
		case *loop.ToolResultData:
			stored = append(stored, d.Name+" "+d.Content)
		case *loop.ToolResultDeltaData:
			t.Fatalf("a piece was stored: %+v", d)
		}
	}
	if want := []string{"scan 1\n22\n", "scan 1\n22\n333\n", `regex_extract ["7","88"]`}; strings.Join(stored, "|") != strings.Join(want, "|") {
		t.Fatalf("stored results %q, want %q", stored, want)
	}
}

// Hostile streamers under mcp serve: a tool that streams 1,500 pieces reaches the client
// with the first 1,000 (the call's bound on reports) and its result whole; a lone
// surrogate arrives as U+FFFD and a 9,000-byte piece cut at 8 KiB.
func TestMCPServeBoundsAndRepairsAToolsStreamedPieces(t *testing.T) {
	_, url := streamHost(t)
	var log progressLog
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{ProgressNotificationHandler: log.handle}).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var whole strings.Builder
	for i := range 1500 {
		whole.WriteString(strconv.Itoa(i) + ",")
	}
	if got := streamCall(t, cs, "flood", "f", nil); got != whole.String() {
		t.Fatalf("flood's result: %d bytes, want %d", len(got), whole.Len())
	}
	if got := streamCall(t, cs, "odd", "o", nil); got != "done" {
		t.Fatalf("odd: %q", got)
	}
	log.await(t, "o", 2) // in order: flood's are all in
	pieces, _ := log.of("f")
	if len(pieces) != 1000 || pieces[0] != "0," || pieces[999] != "999," {
		t.Fatalf("flood: %d pieces (first %q, last %q), want 1000", len(pieces), pieces[0], pieces[len(pieces)-1])
	}
	pieces, _ = log.of("o")
	if len(pieces) != 2 || pieces[0] != "a\uFFFDb" || pieces[1] != strings.Repeat("x", 8<<10)+"… (cut)" {
		t.Fatalf("odd's pieces: %q…", pieces[0])
	}
}
