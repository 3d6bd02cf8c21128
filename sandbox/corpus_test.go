package sandbox

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const corpus = "../../shared/corpus/hyper-mcp/"

func TestCorpusTimeV1(t *testing.T) {
	r := newTestRuntime(t)
	p := load(t, r, Config{Name: "time", Path: corpus + "time_v1.wasm"})
	if _, v1 := p.abi.(*mcpV1); p.ABI() != ABIMCP || !v1 {
		t.Fatalf("abi %s v1=%v, want mcp v1", p.ABI(), v1)
	}
	tools := p.Tools()
	if len(tools) != 1 || tools[0].Name != "time" || !strings.Contains(string(tools[0].InputSchema), `"name"`) {
		t.Fatalf("tools %+v", tools)
	}

	res := callTool(t, p, "time", `{"name":"get_time_utc"}`)
	t.Logf("get_time_utc: %s", res.Text())
	if res.IsError {
		t.Fatalf("error result %q", res.Text())
	}
	var got struct {
		UTCTimestamp int64 `json:"utc_time,string"`
	}
	if err := json.Unmarshal([]byte(res.Text()), &got); err != nil {
		t.Fatalf("result %q: %v", res.Text(), err)
	}
	if d := time.Since(time.Unix(got.UTCTimestamp, 0)); d < -time.Minute || d > time.Minute {
		t.Fatalf("plugin time %d is %s away from now: the clock is not real", got.UTCTimestamp, d)
	}

	// Without "name" the plugin panics: an error result, and the plugin lives on.
	res = callTool(t, p, "time", `{}`)
	wantResult(t, res, true, `plugin "time": call: trapped: unreachable`)
	res = callTool(t, p, "time", `{"name":"parse_time","time_rfc2822":"Tue, 1 Jul 2003 10:52:37 +0200"}`)
	wantResult(t, res, false, `{"utc_time":"1057049557","utc_time_rfc2822":"Tue, 1 Jul 2003 10:52:37 +0200"}`)
}

func TestCorpusRstimeV2(t *testing.T) {
	r := newTestRuntime(t)
	p := load(t, r, Config{Name: "rstime", Path: corpus + "rstime_v2.wasm"})
	if _, v2 := p.abi.(*mcpV2); p.ABI() != ABIMCP || !v2 {
		t.Fatalf("abi %s v2=%v, want mcp v2", p.ABI(), v2)
	}
	var names []string
	for _, tool := range p.Tools() {
		names = append(names, tool.Name)
		if !strings.Contains(string(tool.InputSchema), `"properties"`) {
			t.Errorf("tool %s schema %s", tool.Name, tool.InputSchema)
		}
	}
	if strings.Join(names, ",") != "get_time,parse_time" {
		t.Fatalf("tools %v", names)
	}
	res := callTool(t, p, "get_time", `{}`)
	if res.IsError {
		t.Fatalf("error result %q", res.Text())
	}
	when, err := time.Parse(time.RFC1123Z, res.Text())
	if err != nil {
		t.Fatalf("result %q: %v", res.Text(), err)
	}
	if d := time.Since(when); d < -time.Minute || d > time.Minute {
		t.Fatalf("plugin time %s is %s away from now", when, d)
	}
	wantResult(t, callTool(t, p, "parse_time", `{"time":"Tue, 1 Jul 2003 10:52:37 +0200"}`), false, "1057049557")
	wantResult(t, callTool(t, p, "parse_time", `{}`), true, "Error: 'time' argument is required")
}

func TestExtismPluginsFromTheSDK(t *testing.T) {
	r := newTestRuntime(t)
	wasm := func(name string) string { return filepath.Join(fixtures.extismDir, "wasm", name) }

	vowels := load(t, r, Config{Name: "vowels", Path: wasm("count_vowels.wasm"), ABI: ABIExtism, Tools: extismTool("count_vowels")})
	if got := vowels.Tools(); len(got) != 1 || got[0].Name != "count_vowels" {
		t.Fatalf("tools %+v", got)
	}
	wantResult(t, callTool(t, vowels, "count_vowels", `{"text":"hello world"}`), false, `{"count":3,"total":3,"vowels":"aeiouAEIOU"}`)
	wantResult(t, callTool(t, vowels, "count_vowels", `{}`), true, `argument "text" (a string) is required`)

	haskell := load(t, r, Config{Name: "haskell", Path: wasm("hello_haskell.wasm"),
		Tools:       []ToolDecl{{Name: "greet", Export: "testing", Input: "name"}},
		Permissions: Permissions{Config: map[string]string{"greeting": "Howdy"}}})
	if haskell.ABI() != ABIExtism {
		t.Fatalf("abi %s", haskell.ABI())
	}
	wantResult(t, callTool(t, haskell, "greet", `{"name":"John"}`), false, "Howdy, John")
}

func TestWASICommandFromWazero(t *testing.T) {
	r := newTestRuntime(t)
	dir := filepath.Join(fixtures.wazeroDir, "imports/wasi_snapshot_preview1/example/testdata")
	want, err := os.ReadFile(filepath.Join(dir, "sub/test.txt"))
	if err != nil {
		t.Fatal(err)
	}
	cat := load(t, r, Config{Name: "cat", Path: filepath.Join(dir, "cargo-wasi/cat.wasm"),
		Args:        []string{"cat", "/test.txt"},
		Tools:       []ToolDecl{{Name: "cat", Description: "print test.txt"}},
		Permissions: Permissions{AllowedPaths: map[string]string{"ro:" + filepath.Join(dir, "sub"): "/"}}})
	if cat.ABI() != ABIWASI {
		t.Fatalf("abi %s", cat.ABI())
	}
	// The file ends in a line break; a command's final line ending is not part of its result.
	wantResult(t, callTool(t, cat, "cat", `{}`), false, strings.TrimSuffix(string(want), "\n"))

	missing := load(t, r, Config{Name: "cat", Path: filepath.Join(dir, "cargo-wasi/cat.wasm"), ABI: ABIWASI,
		Args: []string{"cat", "/test.txt"}})
	wantResult(t, callTool(t, missing, "cat", `{}`), true, "exited with code 1: error opening: /test.txt: No such file or directory (plugin \"cat\" has no allowed_paths: it can reach no file)")
}
