package plugins

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/jsbundle"
	"github.com/agenthost/agenthost/sandbox"
)

// jsRuntimePath builds the JS runtime plugin once per process (the script
// does nothing when it is newer than its sources) and returns its path. The
// module is ~19 MB: every test loads this one file, so the Runtime's
// compilation cache (cacheDir) compiles it once, and its pre-initialised
// snapshot once, whatever the bundle.
func jsRuntimePath(t testing.TB) string {
	t.Helper()
	jsBuild.Do(func() {
		cmd := exec.Command("bash", "scripts/plugins.d/jsruntime.sh")
		cmd.Dir = ".."
		out, err := cmd.CombinedOutput()
		if err != nil {
			jsBuildErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if jsBuildErr != nil {
		t.Fatalf("build the JS runtime: %v", jsBuildErr)
	}
	return filepath.Join("jsruntime", "jsruntime.wasm")
}

var (
	jsBuild    sync.Once
	jsBuildErr error
)

// sharedRuntime is one sandbox.Runtime for every JS test of the process: the
// runtime module is compiled once in it.
var sharedRuntime = sync.OnceValues(func() (*sandbox.Runtime, error) {
	return sandbox.NewRuntime(context.Background(), sandbox.RuntimeOptions{CacheDir: cacheDir})
})

// loadJS bundles source (written as name, e.g. "tool.ts") with jsbundle and
// loads it in the runtime plugin, pre-initialised, with cfg's permissions.
func loadJS(t testing.TB, name, source string, cfg sandbox.Config) (*sandbox.Plugin, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(source), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := jsbundle.Build(path)
	if err != nil {
		t.Fatalf("bundle: %v", err)
	}
	if cfg.Permissions.Config, err = b.Config(cfg.Permissions.Config); err != nil {
		t.Fatal(err)
	}
	r, err := sharedRuntime()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Name == "" {
		cfg.Name = "jstool"
	}
	cfg.Path, cfg.Preinit = jsRuntimePath(t), sandbox.PreinitOn
	if cfg.Permissions.Timeout == 0 {
		// The timeout bounds pre-initialisation too (the runtime's _initialize and the
		// bundle's top level): at load 10 on 2 cores the default 5 s was passed once
		// (TestATypeScriptTool...). A test about the bound sets its own.
		cfg.Permissions.Timeout = time.Minute
	}
	ctx := context.Background()
	p, err := r.Load(ctx, cfg)
	if err == nil {
		t.Cleanup(func() { p.Close(ctx) })
	}
	return p, err
}

func mustLoadJS(t testing.TB, name, source string, cfg sandbox.Config) *sandbox.Plugin {
	t.Helper()
	p, err := loadJS(t, name, source, cfg)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return p
}

const weatherTS = `import { tool, kv, config, createMessage, callMeta, http, log } from "agenthost";

interface Args { city: string }

tool({
  name: "weather",
  description: "Today's weather in a city",
  inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  async handler(a: Args) {
    if (a.city === "") {
      throw new Error("city is required");
    }
    const seen: number = Number(kv.get("seen:" + a.city) ?? "0") + 1;
    kv.set("seen:" + a.city, String(seen));
    log.info("asked " + seen + " times");
    const sky = createMessage({ messages: [{ role: "user", content: { type: "text", text: "sky in " + a.city } }], maxTokens: 10 });
    return { city: a.city, seen, sky: sky.content.text, unit: config.get("unit"), call: callMeta().callId };
  },
});

tool({
  name: "fetch",
  description: "GET a URL",
  inputSchema: { type: "object", properties: { url: { type: "string" } } },
  handler: (a: { url: string }) => {
    const r = http.fetch(a.url, { headers: { "x-from": "js" } });
    return r.status + " " + r.body;
  },
});
`

func TestATypeScriptToolRunsInTheSandboxWithTheHostsCapabilities(t *testing.T) {
	h := &recordingHost{answer: "blue"}
	p := mustLoadJS(t, "weather.ts", weatherTS, sandbox.Config{Host: h, Permissions: sandbox.Permissions{
		KV: true, Model: true, Config: map[string]string{"unit": "C"},
	}})
	if got := p.Tools(); len(got) != 2 || got[0].Name != "weather" || got[0].Description != "Today's weather in a city" ||
		string(got[0].InputSchema) != `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}` {
		t.Fatalf("tools = %+v", got)
	}
	ctx := sandbox.WithCallMeta(context.Background(), map[string]any{"agenthost/call_id": "call_1", "agenthost/session_id": "s", "agenthost/run_id": "r"})
	for i, want := range []string{
		`{"city":"Oslo","seen":1,"sky":"blue","unit":"C","call":"call_1"}`,
		`{"city":"Oslo","seen":2,"sky":"blue","unit":"C","call":"call_1"}`,
	} {
		res, err := p.InvokeTool(ctx, "weather", []byte(`{"city":"Oslo"}`))
		if err != nil || res.IsError || res.Text() != want || string(res.StructuredContent) != want {
			t.Fatalf("call %d = %+v, %v; want %s", i, res, err, want)
		}
	}
	if string(h.kv["jstool/seen:Oslo"]) != "2" || len(h.requests) != 2 || !strings.Contains(h.requests[0], `"text":"sky in Oslo"`) {
		t.Errorf("kv %q, model requests %q", h.kv, h.requests)
	}
	if len(h.notified) < 1 || !strings.Contains(h.notified[0], `"level":"info"`) || !strings.Contains(h.notified[0], "asked 1 times") {
		t.Errorf("notifications = %q", h.notified)
	}
	// A thrown error's stack names the TypeScript source's line and column.
	wantTool(t, p, "weather", `{"city":""}`, true, "weather: Error: city is required\n\tat handler (weather.ts:11:13)")
	// Without the kv grant, the host refuses and the call ends there.
	bare := mustLoadJS(t, "weather.ts", weatherTS, sandbox.Config{Name: "bare", Host: h})
	if text := wantFailure(t, bare, "weather", `{"city":"Oslo"}`); !strings.Contains(text, `has no kv permission`) {
		t.Errorf("without kv: %q", text)
	}
}

func TestAJSToolReachesOnlyAllowedHosts(t *testing.T) {
	var hits sync.Map
	serve := func(name string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Store(name, true)
			fmt.Fprintf(w, "%s saw %s", name, r.Header.Get("x-from"))
		}))
		t.Cleanup(s.Close)
		return s
	}
	allowed, forbidden := serve("allowed"), serve("forbidden")
	hostOf := func(s *httptest.Server) string { u, _ := url.Parse(s.URL); return u.Host }
	p := mustLoadJS(t, "weather.ts", weatherTS, sandbox.Config{Permissions: sandbox.Permissions{AllowedHosts: []string{hostOf(allowed)}}})
	wantTool(t, p, "fetch", fmt.Sprintf(`{"url":%q}`, allowed.URL), false, "200 allowed saw js")
	_, port, _ := net.SplitHostPort(hostOf(forbidden))
	text := wantFailure(t, p, "fetch", fmt.Sprintf(`{"url":"http://127.0.0.1:%s/"}`, port))
	if !strings.Contains(text, "not in allowed_hosts") {
		t.Errorf("forbidden host: %q", text)
	}
	if _, hit := hits.Load("forbidden"); hit {
		t.Error("the forbidden server was reached")
	}
}

const hostileJS = `const { tool } = require("agenthost");
tool({ name: "spin", handler() { for (;;) {} } });
tool({ name: "grow", handler() { const a = []; for (;;) { a.push(new Uint8Array(1 << 20)); } } });
tool({ name: "recurse", handler() { const f = (n) => f(n + 1) + 1; return f(0); } });
tool({ name: "huge", handler: () => "y".repeat(100000) });
tool({ name: "notjson", handler: () => () => 1 });
tool({ name: "echo", handler: (a) => a.s + "|" + a.s.length });
tool({ name: "ok", handler: () => "fine" });
`

// Each limit is the sandbox's, as for any plugin. The timeout of the plugin
// that meets the other limits is long, so that a busy machine still meets
// them first; the loop's is short, since nothing but the deadline ends it.
func TestHostileJSIsContainedByTheSandboxLimits(t *testing.T) {
	spin := mustLoadJS(t, "hostile.js", hostileJS, sandbox.Config{Name: "spin", Permissions: sandbox.Permissions{Timeout: 2 * time.Second}})
	if text := wantFailure(t, spin, "spin", `{}`); !strings.Contains(text, `timed out after 2s`) {
		t.Errorf("spin: %q", text)
	}
	wantTool(t, spin, "ok", `{}`, false, "fine")
	p := mustLoadJS(t, "hostile.js", hostileJS, sandbox.Config{Permissions: sandbox.Permissions{
		Timeout: 2 * time.Minute, Memory: 96 << 20, MaxOutput: 64 << 10, Isolation: "pooled",
	}})
	for _, c := range []struct{ tool, want string }{
		{"grow", `memory limit 96 MiB exceeded`},
		{"recurse", "recurse: RangeError: Maximum call stack size exceeded (4096 calls)"},
		{"huge", "exceeds max_output 64 KiB"},
		{"notjson", "notjson: the handler returned a function is not JSON"},
	} {
		text := wantFailure(t, p, c.tool, `{}`)
		if !strings.Contains(text, c.want) {
			t.Errorf("%s: %q, want it to contain %q", c.tool, text, c.want)
		}
		// The plugin is whole after each: a failed instance was discarded.
		wantTool(t, p, "ok", `{}`, false, "fine")
	}
	wantTool(t, p, "echo", "{\"s\":\"a\xffb\"}", false, "a\uFFFDb|3")
}

func TestAJSBundleThatDeclaresAToolTwiceDoesNotLoad(t *testing.T) {
	_, err := loadJS(t, "twice.js", `const { tool } = require("agenthost");
tool({ name: "x", handler() {} });
tool({ name: "x", handler() {} });`, sandbox.Config{})
	if err == nil || !strings.Contains(err.Error(), `tool(): "x" is declared twice`) || !strings.Contains(err.Error(), "\tat twice.js:3:") {
		t.Fatalf("load error = %v", err)
	}
}

func TestJSHooksAnswerTheirExports(t *testing.T) {
	p := mustLoadJS(t, "guard.ts", `import { guard } from "agenthost";
guard((g: { stage: string; content: string }) =>
  g.content.includes("password") ? { action: "redact", content: g.content.replace(/password \S+/, "password ***") } : { action: "allow" });
`, sandbox.Config{})
	got := callExport(t, p, "guard", map[string]string{"stage": "output", "content": "my password hunter2 ok"})
	wantJSON(t, "guard", got, `{"action":"redact","content":"my password *** ok"}`)
	// A termination plugin that cares about on_step only: before_final proceeds.
	term := mustLoadJS(t, "term.js", `require("agenthost").onStep((s) => s.tool_calls_so_far >= 3 ? { verdict: "stop", reason: "3 calls" } : { verdict: "" });`, sandbox.Config{Name: "term"})
	wantJSON(t, "on_step", callExport(t, term, "on_step", map[string]int{"iteration": 2, "tool_calls_so_far": 3}), `{"verdict":"stop","reason":"3 calls"}`)
	wantJSON(t, "before_final", callExport(t, term, "before_final", map[string]string{"text": "done"}), `{"verdict":""}`)
	// A hook the bundle did not register is a fault, not an answer.
	if _, err := term.CallExport(context.Background(), "guard", []byte(`{"stage":"input","content":"x"}`)); err == nil || !strings.Contains(err.Error(), "guard: the bundle registered no function for it") {
		t.Errorf("unregistered guard: %v", err)
	}
}
