package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// agent.toml shows a newcomer every plugin kind: the commented context strategy,
// termination hook and guardrail load as they stand once uncommented.
func TestE2E_DemoManifestShowsEveryPluginKindAndTheyLoad(t *testing.T) {
	build := exec.Command("bash", "scripts/plugins.d/examples.sh", "calc", "sliding_window", "budget_guard", "redact")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build examples: %v\n%s", err, out)
	}
	body, err := os.ReadFile(filepath.Join(repoRoot, "agent.toml"))
	if err != nil {
		t.Fatal(err)
	}
	uncomment := regexp.MustCompile(`(?m)^# (\[\[plugins\]\]|name = |kind = |wasm = )`)
	text := uncomment.ReplaceAllString(string(body), "$1")
	text = strings.ReplaceAll(text, `"plugins/examples/`, `"`+filepath.Join(repoRoot, "plugins/examples")+"/")
	dir := t.TempDir()
	e := &agentEnv{dir: dir, manifest: filepath.Join(dir, "agent.toml")}
	os.WriteFile(e.manifest, []byte(text), 0o644)
	r := e.agenthost(t, "plugins", "list")
	if r.code != 0 {
		t.Fatalf("plugins list: %s", r.stderr)
	}
	for _, want := range []string{"calc +tool +mcp", "window +context", "budget +termination", "redact +guardrail",
		`openai +provider \(confined\) +grpc`, `scripted +provider \(confined\) +grpc`} {
		if !regexp.MustCompile(`(?m)^` + want + ` `).MatchString(r.stdout) {
			t.Errorf("plugins list lacks a row %q:\n%s", want, r.stdout)
		}
	}
}
