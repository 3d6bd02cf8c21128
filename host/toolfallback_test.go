package host

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
)

// fallbackManifest declares tool primary with fallback list fb, beside backup (same
// schema as primary) and other (another schema).
func fallbackManifest(t *testing.T, fb string) *manifest.Manifest {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "t.wasm"), []byte("\x00asm"), 0o644); err != nil {
		t.Fatal(err)
	}
	body := `[agent]
provider = "p"
[providers.p]
command = "x"
[[plugins]]
name = "t"
wasm = "t.wasm"
[[plugins.tools]]
name = "primary"
fallback = ` + fb + `
[[plugins.tools]]
name = "backup"
[[plugins.tools]]
name = "other"
`
	m, err := manifest.Parse(filepath.Join(dir, "agent.toml"), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A tool's fallback list reaches the loop when each fallback is a tool of the agent
// with the same input schema; another schema, or a tool the agent does not have, is
// refused when the agent is built, at the key, with the reason.
func TestToolFallbackNeedsTheSameArgumentsSchemaCheckedAtLoad(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)
	same := json.RawMessage(`{"properties": {"q": {"type": "string"}}, "type": "object"}`) // same value, other text
	own := []loop.Tool{
		declTool{loop.FuncTool{ToolSpec: loop.ToolSpec{Name: "primary", InputSchema: schema}}},
		declTool{loop.FuncTool{ToolSpec: loop.ToolSpec{Name: "backup", InputSchema: same}}},
		declTool{loop.FuncTool{ToolSpec: loop.ToolSpec{Name: "other", InputSchema: json.RawMessage(`{"type":"object"}`)}}},
	}
	h := &Host{Manifest: fallbackManifest(t, `["backup"]`), tools: own}
	got, err := h.toolFallbacks(own)
	if err != nil || len(got) != 1 || len(got["primary"]) != 1 || got["primary"][0].Tool != "backup" || got["primary"][0].Arguments != nil {
		t.Fatalf("fallbacks %v, %v", got, err)
	}
	for fb, want := range map[string]string{
		`["other"]`:   `plugins[0].tools[0].fallback: "other" takes other arguments than "primary" (its input_schema differs)`,
		`["missing"]`: `plugins[0].tools[0].fallback: no tool "missing" among the agent's tools`,
	} {
		h := &Host{Manifest: fallbackManifest(t, fb), tools: own}
		if _, err := h.toolFallbacks(own); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "agent.toml") {
			t.Errorf("fallback = %s: %v, want %q", fb, err, want)
		}
	}
	for fb, want := range map[string]string{`["primary"]`: "cannot fall back to itself", `["backup", "backup"]`: "listed twice", `[""]`: "needs a tool's name"} {
		m, err := manifestParse(t, fb)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "fallback") {
			t.Errorf("fallback = %s: %v %v, want %q", fb, m != nil, err, want)
		}
	}
}

// declTool is a tool of fallbackManifest's plugin t, under its own name.
type declTool struct{ loop.FuncTool }

func (declTool) owner() string       { return "t" }
func (d declTool) ownName() string   { return d.Spec().Name }
func (d declTool) modelName() string { return d.Spec().Name }

// manifestParse is fallbackManifest's text parsed, returning the error.
func manifestParse(t *testing.T, fb string) (*manifest.Manifest, error) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "t.wasm"), []byte("\x00asm"), 0o644); err != nil {
		t.Fatal(err)
	}
	body := "[agent]\nprovider = \"p\"\n[providers.p]\ncommand = \"x\"\n[[plugins]]\nname = \"t\"\nwasm = \"t.wasm\"\n[[plugins.tools]]\nname = \"primary\"\nfallback = " + fb + "\n[[plugins.tools]]\nname = \"backup\"\n"
	return manifest.Parse(filepath.Join(dir, "agent.toml"), []byte(body))
}
