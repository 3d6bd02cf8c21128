package sandbox

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// Each ABI answers for itself what the others do not serve: the mcp v2 requests only
// from a v2 plugin, raw export calls from every ABI but wasi, a re-read tool list only
// from an mcp plugin (a declared list stays as declared).
func TestEachABIServesOnlyWhatItsConventionHas(t *testing.T) {
	ctx := context.Background()
	r := newTestRuntime(t)
	plugins := map[string]*Plugin{
		"v1":     load(t, r, Config{Name: "v1", Path: corpus + "time_v1.wasm"}),
		"v2":     load(t, r, Config{Name: "v2", Path: corpus + "rstime_v2.wasm"}),
		"extism": load(t, r, Config{Name: "extism", Wasm: fixtures.guest, Tools: extismTool("greet")}),
		"wasi":   load(t, r, Config{Name: "wasi", Wasm: fixtures.wasicmd}),
	}
	for name, wantABI := range map[string]string{"v1": ABIMCP, "v2": ABIMCP, "extism": ABIExtism, "wasi": ABIWASI} {
		if got := plugins[name].ABI(); got != wantABI {
			t.Errorf("%s: ABI() = %q, want %q", name, got, wantABI)
		}
	}

	out, err := plugins["v2"].MCPRequest(ctx, "list_prompts", nil)
	if err != nil || !strings.Contains(string(out), `"get_time_with_timezone"`) {
		t.Fatalf("v2 list_prompts: %s %v", out, err)
	}
	for _, name := range []string{"v1", "extism", "wasi"} {
		_, err := plugins[name].MCPRequest(ctx, "list_prompts", nil)
		if want := `plugin "` + name + `": list_prompts is not an mcp v2 request it serves`; err == nil || err.Error() != want {
			t.Errorf("%s list_prompts: got %v, want %q", name, err, want)
		}
	}
	// call_tool is a v2 export, but not one of the requests MCPRequest passes on.
	if _, err := plugins["v2"].MCPRequest(ctx, "call_tool", nil); err == nil ||
		err.Error() != `plugin "v2": call_tool is not an mcp v2 request it serves` {
		t.Errorf("v2 call_tool through MCPRequest: %v", err)
	}

	if out, err := plugins["v1"].CallExport(ctx, "describe", []byte("{}")); err != nil || !strings.Contains(string(out), `"name":"time"`) {
		t.Errorf("v1 describe as a raw export: %s %v", out, err)
	}
	if out, err := plugins["extism"].CallExport(ctx, "greet", []byte("raw")); err != nil || string(out) != "Hello, raw!" {
		t.Errorf("extism greet as a raw export: %s %v", out, err)
	}
	if _, err := plugins["wasi"].CallExport(ctx, "_start", nil); err == nil ||
		err.Error() != `plugin "wasi": a wasi command has no exports to call; use InvokeTool` {
		t.Errorf("wasi CallExport: %v", err)
	}

	for _, name := range []string{"extism", "wasi"} {
		before := plugins[name].Tools()
		if err := plugins[name].RefreshTools(ctx); err != nil || !slices.EqualFunc(before, plugins[name].Tools(), sameTool) {
			t.Errorf("%s RefreshTools: %v, tools %+v then %+v", name, err, before, plugins[name].Tools())
		}
	}
}

// An mcp plugin that changes its tool list (and says so) has the new list after
// RefreshTools, and its new tool can be called; before, the sandbox does not know it.
func TestRefreshToolsReadsAnMCPPluginsNewList(t *testing.T) {
	ctx := context.Background()
	p := load(t, newTestRuntime(t), Config{Name: "dyn", Path: corpus + "tool_list_changed.wasm"})
	names := func() []string {
		var n []string
		for _, tool := range p.Tools() {
			n = append(n, tool.Name)
		}
		return n
	}
	if n := names(); !slices.Contains(n, "add_tool") || slices.Contains(n, "tool_1") {
		t.Fatalf("tools before: %v", n)
	}
	if res := callTool(t, p, "add_tool", `{}`); res.IsError {
		t.Fatalf("add_tool: %s", res.Text())
	}
	if _, err := p.InvokeTool(ctx, "tool_1", []byte(`{}`)); err == nil || err.Error() != `plugin "dyn" has no tool "tool_1"` {
		t.Fatalf("tool_1 before RefreshTools: %v", err)
	}
	if err := p.RefreshTools(ctx); err != nil {
		t.Fatal(err)
	}
	if n := names(); !slices.Contains(n, "tool_1") {
		t.Fatalf("tools after RefreshTools: %v", n)
	}
	if res := callTool(t, p, "tool_1", `{}`); res.IsError {
		t.Fatalf("tool_1: %s", res.Text())
	}
}

func sameTool(a, b ToolSpec) bool {
	return a.Name == b.Name && a.Description == b.Description && string(a.InputSchema) == string(b.InputSchema)
}
