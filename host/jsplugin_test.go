package host

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// jsRuntimeWasm builds the JS runtime plugin once per process (nothing when it is newer
// than its sources) and returns its path; every test loads that one module, compiled
// once into the shared wasm cache.
var jsRuntimeWasm = sync.OnceValues(func() (string, error) {
	root, _ := filepath.Abs("..")
	cmd := exec.Command("bash", "scripts/plugins.d/jsruntime.sh")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the JS runtime: %v\n%s", err, out)
	}
	return filepath.Join(root, "plugins/jsruntime/jsruntime.wasm"), nil
})

const weatherTool = `import { tool, kv, http, createMessage } from "agenthost";

tool({
  name: "weather",
  description: "The sky over a city, and a forecast page",
  inputSchema: { type: "object", properties: { city: { type: "string" }, url: { type: "string" } }, required: ["city", "url"] },
  async handler(a: { city: string; url: string }) {
    const seen = Number(kv.get(a.city) ?? "0") + 1;
    kv.set(a.city, String(seen));
    const page = http.fetch(a.url);
    const sky = createMessage({ messages: [{ role: "user", content: { type: "text", text: "sky in " + a.city } }], maxTokens: 20 });
    return a.city + " #" + seen + ": " + sky.content.text + ", page " + page.status + " " + page.body;
  },
});
`

// openJSHost opens a manifest beside tool.ts (source) whose one plugin runs it.
func openJSHost(t *testing.T, source, fixture, plugin string) (*Host, error) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"script.json": fixture, "tool.ts": source, "agent.toml": fmt.Sprintf(`[agent]
provider = "scripted"
model = "m1"
[providers.scripted]
command = %q
options = { script = "script.json" }
[store]
kind = "memory"
%s`, scriptedBin, plugin)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := Open(context.Background(), Options{Manifest: filepath.Join(dir, "agent.toml"), CacheDir: wasmCache})
	if err == nil {
		t.Cleanup(func() { h.Close() })
	}
	return h, err
}

// A TypeScript tool named by [[plugins]] js runs in a scripted run like any plugin: its
// KV, its HTTP within allowed_hosts (and refused outside), its create_message answered
// by the run's model.
func TestATypeScriptToolRunsInAScriptedRun(t *testing.T) {
	runtime, err := jsRuntimeWasm()
	if err != nil {
		t.Fatal(err)
	}
	var forbiddenHits atomic.Int32
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "rain at noon") }))
	defer allowed.Close()
	forbidden := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { forbiddenHits.Add(1) }))
	defer forbidden.Close()
	u, _ := url.Parse(allowed.URL)
	fixture := fmt.Sprintf(`{"per_session": false, "turns": [
	  {"tool_calls": [{"id": "c1", "name": "weather", "arguments": %q}]},
	  {"expect": {"contains": "sky in Oslo"}, "text": "blue"},
	  {"tool_calls": [{"id": "c2", "name": "weather", "arguments": %q}]},
	  {"text": "{{result c1}} | {{result c2}}"}]}`,
		fmt.Sprintf(`{"city":"Oslo","url":%q}`, allowed.URL), fmt.Sprintf(`{"city":"Oslo","url":%q}`, forbidden.URL))
	h, err := openJSHost(t, weatherTool, fixture, fmt.Sprintf(`[[plugins]]
name = "weather"
js = "tool.ts"
wasm = %q
[plugins.permissions]
kv = true
model = true
allowed_hosts = [%q]
timeout = "60s" # the runtime's _initialize took over 5 s under -race on a loaded machine
`, runtime, u.Host))
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Agent.Run(context.Background(), loop.RunInput{Messages: []loop.Message{loop.UserMessage("weather in Oslo?")}})
	if err != nil {
		t.Fatal(err)
	}
	fu, _ := url.Parse(forbidden.URL)
	want := fmt.Sprintf(`Oslo #1: blue, page 200 rain at noon | plugin "weather": call: host %s not in allowed_hosts`, fu.Host)
	if res.Final.Text() != want {
		t.Errorf("final %q\nwant  %q", res.Final.Text(), want)
	}
	if forbiddenHits.Load() != 0 {
		t.Error("the host outside allowed_hosts was reached")
	}
	// The second call counted before its fetch was refused: the host ended the call there.
	if v, ok, err := h.services.KVGet(context.Background(), "weather", "Oslo"); err != nil || !ok || string(v) != "2" {
		t.Errorf("kv Oslo = %q %v %v", v, ok, err)
	}
}

// A source that does not build fails the load at the plugin's js key, with esbuild's
// file:line:col; without a runtime file, the error says where it was looked for.
func TestAJSPluginThatCannotBeBuiltOrRunSaysWhy(t *testing.T) {
	_, err := openJSHost(t, "import { tool } from \"agenthost\";\nconst x: number = ;\n", `{"turns": []}`, "[[plugins]]\nname = \"w\"\njs = \"tool.ts\"\n")
	if err == nil || !strings.Contains(err.Error(), "plugins[0].js") || !strings.Contains(err.Error(), "tool.ts:2:19: Unexpected \";\"") {
		t.Fatalf("err = %v", err)
	}
	t.Setenv(JSRuntimeEnv, "")
	_, err = openJSHost(t, weatherTool, `{"turns": []}`, "[[plugins]]\nname = \"w\"\njs = \"tool.ts\"\n")
	if err == nil || !strings.Contains(err.Error(), "jsruntime.wasm is missing (`make plugins` builds it into bin/)") {
		t.Fatalf("err = %v", err)
	}
}
