package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/serve"
)

// Example embeds agenthost in a Go program. The agent comes from a manifest — its model
// (here the scripted adapter, a real provider process) and a Wasm plugin (calc) — and
// the program adds a Go tool of its own beside the plugin (host.Options.Tools). A run
// goes through the host's door for a principal, streaming its events; then the same
// host is served over HTTP, as `agenthost serve` does, and a client runs it there.
func Example() {
	dir, _ := os.MkdirTemp("", "embed-")
	defer os.RemoveAll(dir)
	// The model's turns: call each tool, answer with their results; then one answer
	// for the run served over HTTP.
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"per_session": false, "turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]},
	  {"tool_calls": [{"id": "c2", "name": "greet", "arguments": "{\"name\":\"Ana\"}"}]},
	  {"text": "{{result c1}}; {{result c2}}"},
	  {"text": "Served."}]}`), 0o644)
	os.WriteFile(filepath.Join(dir, "agent.toml"), []byte(fmt.Sprintf(`
[agent]
name = "embedded"
provider = "scripted"
model = "demo"
[providers.scripted]
command = %q
options = { script = "script.json" }
[store]
kind = "sqlite"
path = "agent.db"
[[plugins]]
name = "calc"
wasm = %q
`, scriptedAdapter(), calcPlugin())), 0o644)

	// A Go tool: its schema is checked, and its calls take the same pipeline as the
	// plugin's (guardrails, permission, approvals, caps, storage, audit).
	greet := loop.FuncTool{
		ToolSpec: loop.ToolSpec{Name: "greet", Description: "Greet someone by name",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)},
		Fn: func(_ context.Context, c loop.ToolCall) (loop.ToolResult, error) {
			var in struct{ Name string }
			if err := json.Unmarshal([]byte(c.Arguments), &in); err != nil {
				return loop.ToolResult{}, err
			}
			return loop.TextResult("Hello, " + in.Name + "!"), nil
		},
	}
	ctx := context.Background()
	h, err := serve.Open(ctx, host.Options{Manifest: filepath.Join(dir, "agent.toml"), Tools: []loop.Tool{greet}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()

	// One run through the door, for the machine's own user, its events streamed.
	res, err := h.Door().Run(ctx, h.Local(ctx, "ana"), loop.RunInput{SessionID: "s1",
		Messages: []loop.Message{loop.UserMessage("6*7, and greet Ana")}}, func(e loop.Event) {
		switch d := e.Data.(type) {
		case *loop.ToolCallData:
			fmt.Printf("tool_call %s %s\n", d.Name, d.Arguments)
		case *loop.ToolResultData:
			fmt.Printf("tool_result %s: %s\n", d.Name, d.Content)
		}
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %s\n", res.Status, res.Final.Text())

	// The same host over HTTP: a run streamed as server-sent events.
	// Port 0 picks a free one; Run reports the address it serves on.
	sctx, stop := context.WithCancel(ctx)
	done, addrs := make(chan error, 1), make(chan string, 1)
	go func() {
		done <- serve.Run(sctx, h, serve.Config{Addr: "127.0.0.1:0", Logf: func(f string, a ...any) {
			if addr, ok := strings.CutPrefix(fmt.Sprintf(f, a...), "serving on http://"); ok {
				addrs <- addr
			}
		}})
	}()
	var addr string
	select {
	case addr = <-addrs:
	case err := <-done:
		stop()
		fmt.Println("serve:", err)
		return
	}
	body, err := postRun("http://"+addr+"/v1/runs", `{"threadId": "s2", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "hello"}]}`)
	if err != nil {
		fmt.Println(err)
	}
	fmt.Println("over HTTP:", body)
	stop()
	<-done
	// Output:
	// tool_call calc {"expression":"6*7"}
	// tool_result calc: 42
	// tool_call greet {"name":"Ana"}
	// tool_result greet: Hello, Ana!
	// completed: 42; Hello, Ana!
	// over HTTP: Served.
}

// scriptedAdapter is the scripted provider's adapter built from this repository (`make
// build` puts it in bin/).
func scriptedAdapter() string {
	p, err := testbin.Build(testbin.Scripted)
	if err != nil {
		panic(err)
	}
	return p
}

// calcPlugin is the calc example plugin (`make plugins` builds it).
func calcPlugin() string {
	root, _ := filepath.Abs("..")
	p := filepath.Join(root, "plugins/examples/go/calc/calc.wasm")
	if _, err := os.Stat(p); err != nil {
		cmd := exec.Command("bash", "scripts/plugins.d/examples.sh", "calc")
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			panic(fmt.Sprintf("build calc: %v\n%s", err, b))
		}
	}
	return p
}

// postRun starts a run over HTTP (an AG-UI RunAgentInput) once the server answers, and
// returns the text its AG-UI event stream carried.
func postRun(url, body string) (string, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			if time.Now().After(deadline) {
				return "", err
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return "", err
		}
		var text strings.Builder
		for _, line := range strings.Split(string(b), "\n") {
			var e struct{ Type, Delta string }
			if strings.HasPrefix(line, "data: ") && json.Unmarshal([]byte(line[6:]), &e) == nil && e.Type == "TEXT_MESSAGE_CONTENT" {
				text.WriteString(e.Delta)
			}
		}
		if text.Len() == 0 {
			return "", fmt.Errorf("no text in %d %q", resp.StatusCode, b)
		}
		return text.String(), nil
	}
}
