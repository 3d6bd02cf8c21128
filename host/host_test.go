package host

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/confine"
	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/providers"
)

// These tests open real hosts: the scripted adapter runs as a subprocess and calc is the
// Go example compiled to Wasm.
var (
	scriptedBin string
	calcWasm    string
	// wasmCache is one compilation cache for every host the tests open, so each plugin
	// is compiled once per test binary rather than once per test (as a restarted host does).
	wasmCache string
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == confine.Subcommand { // the test binary confines the commands it starts, as agenthost does
		fmt.Fprintln(os.Stderr, "confine:", confine.Main(os.Args[2:]))
		os.Exit(126)
	}
	SelfExe, _ = os.Executable()
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "host-test-")
		if err != nil {
			panic(err)
		}
		defer os.RemoveAll(dir)
		defer providers.CleanupClients()
		wasmCache = filepath.Join(dir, "wasm-cache")
		defer testbin.Cleanup()
		if scriptedBin, err = testbin.Build(testbin.Scripted); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		root, _ := filepath.Abs("..")
		calcWasm = filepath.Join(root, "plugins/examples/go/calc/calc.wasm")
		if _, err := os.Stat(calcWasm); err != nil {
			cmd := exec.Command("bash", "scripts/plugins.d/examples.sh", "calc")
			cmd.Dir = root
			if b, err := cmd.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "build calc plugin: %v\n%s", err, b)
				return 1
			}
		}
		return m.Run()
	}())
}

// openHost writes a manifest with the scripted provider playing fixture and the given
// plugin tables, and opens it.
func openHost(t *testing.T, fixture, plugins string, opts Options) *Host {
	t.Helper()
	return openHostWith(t, "", fixture, plugins, opts)
}

// openHostWith is openHost with extra [agent] keys.
func openHostWith(t *testing.T, agentExtra, fixture, plugins string, opts Options) *Host {
	t.Helper()
	h, err := openHostErr(t, agentExtra, fixture, plugins, opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// openHostErr is openHostWith returning Open's error.
func openHostErr(t *testing.T, agentExtra, fixture, plugins string, opts Options) (*Host, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "script.json"), []byte(fixture), 0o644); err != nil {
		return nil, err
	}
	manifest := fmt.Sprintf(`[agent]
provider = "scripted"
model = "m1"
%s
[providers.scripted]
command = %q
options = { script = "script.json" }
[store]
kind = "memory"
%s`, agentExtra, scriptedBin, plugins)
	p := filepath.Join(dir, "agent.toml")
	if err := os.WriteFile(p, []byte(manifest), 0o644); err != nil {
		return nil, err
	}
	opts.Manifest = p
	if opts.CacheDir == "" {
		opts.CacheDir = wasmCache
	}
	h, err := Open(context.Background(), opts)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { h.Close() })
	return h, nil
}

func calcPlugin(name string) string {
	return fmt.Sprintf("[[plugins]]\nname = %q\nwasm = %q\n", name, calcWasm)
}

func TestOpenWiresPluginsProviderAndStore(t *testing.T) {
	// Two plugins offer "calc": both tools are namespaced plugin__tool.
	h := openHost(t, `{"turns": [
	  {"expect": {"tools_offered": true}, "reasoning": "r", "tool_calls": [{"id": "c1", "name": "second__calc", "arguments": "{\"expression\":\"2**3\"}"},
	    {"id": "c2", "name": "first__calc", "arguments": "{\"expression\":\"7*6\"}"}],
	   "usage": {"prompt_tokens": 5, "completion_tokens": 2, "cost_usd": 0.25}},
	  {"text": "{{result c1}} / {{result c2}}"}]}`, calcPlugin("first")+calcPlugin("second"), Options{})
	var names []string
	for _, p := range h.Plugins() {
		names = append(names, p.Name())
	}
	if strings.Join(names, ",") != "first,second" {
		t.Fatalf("plugins %v", names)
	}
	if _, ok := h.Plugin("second"); !ok {
		t.Fatal("Plugin(second) not found")
	}
	if w := `tool "calc" is offered by first, second: the model sees it as first__calc, second__calc`; len(h.Warnings) != 1 || h.Warnings[0] != w {
		t.Fatalf("warnings %q", h.Warnings)
	}
	if got := fmt.Sprint(h.ModelToolNames()); got != "map[first:[first__calc] second:[second__calc]]" {
		t.Fatalf("model names %s", got)
	}
	var evs []loop.Event
	res, err := h.Agent.RunWith(context.Background(), loop.RunInput{Messages: []loop.Message{loop.UserMessage("go")}},
		func(e loop.Event) { evs = append(evs, e) })
	if err != nil {
		t.Fatal(err)
	}
	// "2**3" is not an expression calc knows: its error result reaches the model as text.
	if res.Final.Text() != `unexpected "*" at position 3 / 42` {
		t.Fatalf("final %q", res.Final.Text())
	}
	if res.Usage.PromptTokens != 5 || res.Usage.CostUSD != 0.25 {
		t.Fatalf("usage %+v", res.Usage)
	}
	var toolNames []string
	for _, e := range evs {
		if d, ok := e.Data.(*loop.ToolResultData); ok {
			toolNames = append(toolNames, d.Name+":"+fmt.Sprint(d.IsError))
		}
	}
	if strings.Join(toolNames, ",") != "second__calc:true,first__calc:false" {
		t.Fatalf("tool results %v", toolNames)
	}
	// A memory store lists its sessions too (loop.SessionLister).
	if ss, err := h.Sessions(context.Background()); err != nil || len(ss) != 1 || ss[0].ID != res.SessionID || ss[0].Runs != 1 {
		t.Fatalf("sessions %+v %v", ss, err)
	}
}

func TestProviderErrorsBecomeModelErrors(t *testing.T) {
	h := openHost(t, `{"turns": [
	  {"error": {"kind": "rate_limit", "message": "later", "retry_after_ms": 1}},
	  {"error": {"kind": "invalid_request", "message": "bad tools"}}]}`, "", Options{})
	res, _ := h.Agent.Run(context.Background(), loop.RunInput{Messages: []loop.Message{loop.UserMessage("go")}})
	if res.Status != loop.StatusFailed || res.Err.Error() != "model call failed: invalid_request: bad tools" {
		t.Fatalf("result %+v %v", res, res.Err)
	}
}

func TestRequestMappingCarriesEverything(t *testing.T) {
	req := loop.Request{Model: "m", ToolChoice: "auto", ResponseFormat: json.RawMessage(`{"type":"object"}`), MaxTokens: 9,
		Metadata: loop.RequestMetadata{SessionID: "s", RunID: "r", CallIndex: 3},
		Tools:    []loop.ToolSpec{{Name: "t", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		Messages: []loop.Message{
			{Role: loop.RoleUser, Content: []loop.Part{loop.TextPart("hi"), {Type: loop.PartImage, URL: "data:image/png;base64,AAEC"},
				{Type: loop.PartImage, URL: "https://x/y.png", MimeType: "image/png"}}},
			{Role: loop.RoleAssistant, Reasoning: "why", ReasoningState: `[{"sig":"x"}]`, ToolCalls: []loop.ToolCall{{ID: "c", Name: "t", Arguments: "{}"}}},
			{Role: loop.RoleTool, ToolCallID: "c", Name: "t", Content: []loop.Part{loop.TextPart("ok")}},
		}}
	got := toChatRequest(req)
	if got.Model != "m" || got.ToolChoice != "auto" || got.ResponseFormat != `{"type":"object"}` || got.MaxTokens != 9 ||
		got.Metadata.GetCallIndex() != 3 || got.Metadata.GetSession() != "s" || got.Tools[0].InputSchema != `{"type":"object"}` {
		t.Fatalf("request %v", got)
	}
	parts := got.Messages[0].Content
	if string(parts[1].ImageData) != "\x00\x01\x02" || parts[1].MediaType != "image/png" || parts[2].ImageUrl != "https://x/y.png" {
		t.Fatalf("image parts %v", parts)
	}
	if m := got.Messages[1]; m.Reasoning != "why" || m.ReasoningState != `[{"sig":"x"}]` || m.ToolCalls[0].Arguments != "{}" {
		t.Fatalf("assistant %v", m)
	}
	if m := got.Messages[2]; m.ToolCallId != "c" || m.Name != "t" || m.Content[0].Text != "ok" {
		t.Fatalf("tool %v", m)
	}
	pe := &providers.Error{Kind: providers.KindRateLimit, Message: "x", Retryable: true}
	me, ok := toModelError(fmt.Errorf("wrapped: %w", pe)).(*loop.ModelError)
	if !ok || me.Kind != loop.KindRateLimit || !me.Retryable {
		t.Fatalf("mapped %v", me)
	}
	if err := toModelError(context.Canceled); err != context.Canceled {
		t.Fatalf("context error mapped to %v", err)
	}
}

func TestServicesCreateMessageAndKV(t *testing.T) {
	h := openHost(t, `{"turns": [{"expect": {"last_role": "user", "tools_offered": false, "contains": "summarise"}, "text": "a summary"}]}`,
		"", Options{})
	ctx := context.Background()
	out, err := h.services.CreateMessage(ctx, "p", json.RawMessage(
		`{"messages":[{"role":"user","content":{"type":"text","text":"please summarise"}}],"systemPrompt":"be short","maxTokens":50}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"content":{"text":"a summary","type":"text"},"model":"m1","role":"assistant","stopReason":"endTurn"}` {
		t.Fatalf("result %s", out)
	}
	if _, err := h.services.CreateMessage(ctx, "p", json.RawMessage(`{`)); err == nil {
		t.Fatal("bad request accepted")
	}
	s := h.services
	if err := s.KVSet(ctx, "p", "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := s.KVGet(ctx, "p", "k"); !ok || string(v) != "v" {
		t.Fatalf("get %q %v", v, ok)
	}
	if err := s.KVDelete(ctx, "p", "k"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.KVGet(ctx, "p", "k"); ok {
		t.Fatal("deleted key still reads")
	}
	var got []any
	s.onReport = func(r any) { got = append(got, r) }
	s.Notify(ctx, "p", "notifications/progress", json.RawMessage(`{"progressToken":"t","progress":1,"total":4,"message":"one"}`))
	s.Notify(ctx, "p", "notifications/message", json.RawMessage(`{"level":"error","logger":"db","data":"no rows"}`))
	s.Notify(ctx, "p", "notifications/message", json.RawMessage(`{"level":"shout","data":{"n":1}}`))
	s.Notify(ctx, "p", "notifications/message", json.RawMessage(`[1,2]`))
	s.Notify(ctx, "p", "notifications/tools/list_changed", nil)
	want := []any{
		loop.ProgressData{Plugin: "p", Progress: 1, Total: 4, Message: "one"},
		loop.PluginLogData{Plugin: "p", Level: "error", Message: "[db] no rows"},
		loop.PluginLogData{Plugin: "p", Level: "info", Message: `{"n":1}`},
		loop.PluginLogData{Plugin: "p", Level: "warning", Message: "unreadable log notification: [1,2]"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("reports\n got %v\nwant %v", got, want)
	}
}

func TestOpenErrorsNameTheCulprit(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.wasm")
	os.WriteFile(bad, []byte("not wasm"), 0o644)
	manifest := fmt.Sprintf("[agent]\nprovider = \"p\"\n[providers.p]\ncommand = %q\n[store]\nkind = \"memory\"\n\n[[plugins]]\nname = \"broken\"\nwasm = %q\n", scriptedBin, bad)
	p := filepath.Join(dir, "agent.toml")
	os.WriteFile(p, []byte(manifest), 0o644)
	_, err := Open(context.Background(), Options{Manifest: p})
	if err == nil || !strings.HasPrefix(err.Error(), p+":8: plugins[0]: load plugin \"broken\": not a WebAssembly binary module") {
		t.Fatalf("err = %v", err)
	}
	os.WriteFile(p, []byte(strings.Replace(manifest, "[[plugins]]", "[[nothing]]", 1)[:strings.Index(manifest, "[[plugins]]")]), 0o644)
	_, err = Open(context.Background(), Options{Manifest: p, Provider: "other"})
	if err == nil || err.Error() != p+`: --provider "other": no [providers.other] in the manifest` {
		t.Fatalf("err = %v", err)
	}
}

func TestManifestPricingCostsAndBudgets(t *testing.T) {
	// 1M prompt tokens at $2 and 500k completion tokens at $8: $6 per call, over the
	// $5 budget after the first, so the run ends with a summary.
	h := openHostWith(t, "max_cost_usd = 5.0\n[agent.pricing]\nprompt_per_mtok = 2.0\ncompletion_per_mtok = 8.0", `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"1+1\"}"}], "usage": {"prompt_tokens": 1000000, "completion_tokens": 500000}},
	  {"expect": {"tools_offered": false, "contains": "summarise"}, "text": "spent too much", "usage": {"prompt_tokens": 10, "completion_tokens": 0}}]}`,
		calcPlugin("calc"), Options{})
	res, _ := h.Agent.Run(context.Background(), loop.RunInput{Messages: []loop.Message{loop.UserMessage("go")}})
	if res.Status != loop.StatusIncomplete || res.Reason != loop.ReasonBudgetExceeded || res.Final.Text() != "spent too much" {
		t.Fatalf("result %+v", res)
	}
	if want := 6.0 + 20.0/1e6; res.Usage.CostUSD < want-1e-9 || res.Usage.CostUSD > want+1e-9 {
		t.Fatalf("cost %v, want %v", res.Usage.CostUSD, want)
	}
}
