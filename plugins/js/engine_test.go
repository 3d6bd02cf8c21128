package js

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/plugins/sdk"
)

// load runs a CommonJS bundle, as jsbundle makes them.
func load(t *testing.T, src string) *Engine {
	t.Helper()
	e, err := Load("tool.js", src)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return e
}

const prelude = `const { tool, kv, config, log, callMeta } = require("agenthost");` + "\n"

func call(e *Engine, h Host, name, args string) sdk.CallToolResult {
	return e.Call(h, CallMeta{CallID: "c1", SessionID: "s1", RunID: "r1"}, name, []byte(args))
}

func text(r sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func TestToolsAreDeclaredInOrderWithTheirSchemas(t *testing.T) {
	e := load(t, prelude+`
tool({name: "b", description: "second", inputSchema: {type: "object", properties: {x: {type: "number"}}}, handler: () => 1});
tool({name: "a", handler: () => 2});`)
	got := e.Tools()
	if len(got) != 2 || got[0].Name != "b" || got[0].Description != "second" || got[1].Name != "a" {
		t.Fatalf("tools = %+v", got)
	}
	if string(got[0].InputSchema) != `{"type":"object","properties":{"x":{"type":"number"}}}` || string(got[1].InputSchema) != `{"type":"object"}` {
		t.Errorf("schemas = %s, %s", got[0].InputSchema, got[1].InputSchema)
	}
}

func TestABundleThatDoesNotDeclareToolsProperlyDoesNotLoad(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"twice", prelude + `tool({name: "x", handler(){}}); tool({name: "x", handler(){}});`, `tool(): "x" is declared twice`},
		{"no name", prelude + `tool({handler(){}});`, `tool(): name is required`},
		{"no handler", prelude + `tool({name: "x", handler: 3});`, `tool("x"): handler must be a function`},
		{"schema not an object", prelude + `tool({name: "x", inputSchema: "string", handler(){}});`, `tool("x"): inputSchema must be a JSON Schema object`},
		{"nothing declared", prelude, `the bundle declares no tool`},
		{"throws", prelude + "\n\nthrow new Error('bad config');", "Error: bad config\n\tat tool.js:4:7"},
		{"syntax", prelude + "tool({", "tool.js"},
		{"host function at load", prelude + `kv.get("k");`, "kv.get: host functions are available in handlers only, not while the bundle loads"},
		{"another module", `require("fs");`, `require("fs"): only "agenthost" is provided`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load("tool.js", c.src)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Load error = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestAHandlersValueBecomesTheResult(t *testing.T) {
	e := load(t, prelude+`
tool({name: "str", handler: (a) => "hi " + a.who});
tool({name: "obj", handler: (a) => ({n: a.n * 2, list: [1, "x"]})});
tool({name: "none", handler() {}});
tool({name: "result", handler: () => ({content: [{type: "text", text: "as is"}], isError: true})});
tool({name: "async", async handler(a) { const v = await Promise.resolve(a.n); return v + 1; }});`)
	for _, c := range []struct{ tool, args, text, structured string }{
		{"str", `{"who":"ana"}`, "hi ana", ""},
		{"obj", `{"n":21}`, `{"n":42,"list":[1,"x"]}`, `{"n":42,"list":[1,"x"]}`},
		{"none", `{}`, "", ""},
		{"async", `{"n":1}`, "2", "2"},
	} {
		r := call(e, nil, c.tool, c.args)
		if r.IsError || text(r) != c.text || string(r.StructuredContent) != c.structured {
			t.Errorf("%s(%s) = %+v, want text %q structured %q", c.tool, c.args, r, c.text, c.structured)
		}
	}
	if r := call(e, nil, "result", `{}`); !r.IsError || text(r) != "as is" {
		t.Errorf("a CallToolResult is taken as it is: %+v", r)
	}
}

func TestWhatAHandlerDoesWrongIsAnErrorResultSayingWhat(t *testing.T) {
	e := load(t, prelude+`
tool({name: "throws", handler() {
  throw new TypeError("bad input");
}});
tool({name: "fn", handler: () => () => 1});
tool({name: "cycle", handler() { const o = {}; o.self = o; return o; }});
tool({name: "bigint", handler: () => ({n: 10n})});
tool({name: "rejects", async handler() { throw new RangeError("later"); }});
tool({name: "pending", handler: () => new Promise(() => {})});
tool({name: "deep", handler() { const f = (n) => f(n + 1) + 1; return f(0); }});
tool({name: "declares", handler() { tool({name: "late", handler() {}}); }});`)
	for _, c := range []struct{ tool, want string }{
		{"throws", "throws: TypeError: bad input\n\tat handler (tool.js:4:9)"},
		{"fn", "fn: the handler returned a function is not JSON"},
		{"cycle", "cycle: the handler returned TypeError: Converting circular structure to JSON"},
		{"bigint", "bigint: the handler returned TypeError: Do not know how to serialize a BigInt"},
		{"rejects", "rejects: RangeError: later\n\tat handler (tool.js:9:"},
		{"pending", "pending: the promise it returned never settled"},
		{"deep", "deep: RangeError: Maximum call stack size exceeded"},
		{"declares", "declares: TypeError: tool(): declare tools when the bundle loads, not from a handler"},
		{"missing", `unknown tool "missing"`},
	} {
		r := call(e, nil, c.tool, `{}`)
		if !r.IsError || !strings.HasPrefix(text(r), c.want) {
			t.Errorf("%s = %+v, want an error starting %q", c.tool, r, c.want)
		}
	}
	// The engine is whole after every failure: the next call works.
	e2 := load(t, prelude+`tool({name: "ok", handler: () => "ok"}); tool({name: "deep", handler() { const f = (n) => f(n + 1); return f(0); }});`)
	call(e2, nil, "deep", `{}`)
	if r := call(e2, nil, "ok", `{}`); r.IsError || text(r) != "ok" {
		t.Errorf("after a failure: %+v", r)
	}
}

func TestInvalidUTF8InArgumentsReachesTheHandlerAsReplacementCharacters(t *testing.T) {
	e := load(t, prelude+`tool({name: "echo", handler: (a) => a.s + "|" + a.s.length});`)
	r := call(e, nil, "echo", "{\"s\":\"a\xffb\"}")
	if r.IsError || text(r) != "a\uFFFDb|3" {
		t.Errorf("echo = %+v", r)
	}
	if r := call(e, nil, "echo", `{"s":`); !r.IsError || !strings.HasPrefix(text(r), "echo: arguments are not JSON") {
		t.Errorf("truncated arguments = %+v", r)
	}
}

// memHost keeps KV in memory and records logs: the engine's side of the host
// functions (the plugins/ tests run them against the real host).
type memHost struct {
	kv     map[string]string
	logs   []string
	files  map[string][]byte // fs, by path (fs_test.go)
	pieces []string          // what streamResult sent (stream_test.go)
}

func (h *memHost) KVGet(k string) (string, bool, error) { v, ok := h.kv[k]; return v, ok, nil }
func (h *memHost) KVSet(k, v string) error              { h.kv[k] = v; return nil }
func (h *memHost) KVDelete(k string) error              { delete(h.kv, k); return nil }
func (h *memHost) Config(k string) (string, bool) {
	return map[string]string{"unit": "C"}[k], k == "unit"
}
func (h *memHost) HTTP(HTTPRequest) (HTTPResponse, error) {
	return HTTPResponse{}, errors.New("host example.com not in allowed_hosts")
}
func (h *memHost) CreateMessage(json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"hello"}}`), nil
}
func (h *memHost) Log(level, msg string) error             { h.logs = append(h.logs, level+": "+msg); return nil }
func (h *memHost) Progress(float64, float64, string) error { return nil }
func (h *memHost) StreamResult(s string) error             { h.pieces = append(h.pieces, s); return nil }

func TestTheAgenthostModuleReachesTheHostDuringACall(t *testing.T) {
	e := load(t, prelude+`
const { http, createMessage } = require("agenthost");
tool({name: "count", async handler() {
  const n = Number(kv.get("n") ?? "0") + 1;
  kv.set("n", String(n));
  log.info("n=" + n);
  const m = callMeta();
  return {n, unit: config.get("unit"), missing: config.get("nope") === undefined, call: m.callId, run: m.runId};
}});
tool({name: "fetch", handler() { return http.fetch("https://example.com/").body; }});
tool({name: "ask", handler() { return createMessage({messages: [], maxTokens: 5}).content.text; }});`)
	h := &memHost{kv: map[string]string{}}
	call(e, h, "count", `{}`)
	r := call(e, h, "count", `{}`)
	if r.IsError || text(r) != `{"n":2,"unit":"C","missing":true,"call":"c1","run":"r1"}` || h.kv["n"] != "2" {
		t.Errorf("count = %+v, kv %v", r, h.kv)
	}
	if strings.Join(h.logs, ";") != "info: n=1;info: n=2" {
		t.Errorf("logs = %q", h.logs)
	}
	if r := call(e, h, "fetch", `{}`); !r.IsError || !strings.Contains(text(r), "http.fetch: host example.com not in allowed_hosts") {
		t.Errorf("fetch = %+v", r)
	}
	if r := call(e, h, "ask", `{}`); r.IsError || text(r) != "hello" {
		t.Errorf("ask = %+v", r)
	}
}

func TestAGuardAnswersTheGuardrailABI(t *testing.T) {
	e := load(t, prelude+`require("agenthost").guard((g) => g.content.includes("secret") ? {action: "block", reason: "secret"} : {action: "allow"});`)
	out, ok, err := e.Hook("guard", nil, []byte(`{"stage":"input","content":"my secret"}`))
	if !ok || err != nil || string(out) != `{"action":"block","reason":"secret"}` {
		t.Errorf("guard = %s, %v, %v", out, ok, err)
	}
	if _, ok, _ := load(t, prelude+`tool({name: "x", handler() {}});`).Hook("guard", nil, []byte(`{}`)); ok {
		t.Error("a bundle without guard answered a guard call")
	}
	// Every hook kind registers the same way; twice is refused.
	e = load(t, prelude+`const a = require("agenthost");
a.onStep((s) => s.iteration > 2 ? {verdict: "stop", reason: "enough"} : {verdict: ""});
a.permit((p) => ({decision: p.tool === "rm" ? "deny" : "allow"}));`)
	if out, ok, err := e.Hook("on_step", nil, []byte(`{"iteration":3}`)); !ok || err != nil || string(out) != `{"verdict":"stop","reason":"enough"}` {
		t.Errorf("on_step = %s %v %v", out, ok, err)
	}
	if out, _, _ := e.Hook("permit", nil, []byte(`{"tool":"rm"}`)); string(out) != `{"decision":"deny"}` {
		t.Errorf("permit = %s", out)
	}
	if _, err := Load("t.js", prelude+`const a = require("agenthost"); a.grade(() => 1); a.grade(() => 2);`); err == nil || !strings.Contains(err.Error(), "grade(fn): one function") {
		t.Errorf("grade twice: %v", err)
	}
}
