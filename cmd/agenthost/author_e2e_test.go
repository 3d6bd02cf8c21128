package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/loop"
)

// The plugin author's view (issue 15): what a plugin logs and prints is seen, a .wasm is
// callable by path, and a broken build is named with its fix.

// authorPlugins builds (once per test process, testbin) chatty and notools as reactors
// and command (chatty built without c-shared).
func authorPlugins(t *testing.T) map[string]string {
	t.Helper()
	return map[string]string{
		"chatty":  testbin.Path(t, testbin.Bin{Pkg: "cmd/agenthost/testdata/chatty", Wasm: true, CShared: true}),
		"notools": testbin.Path(t, testbin.Bin{Pkg: "cmd/agenthost/testdata/notools", Wasm: true, CShared: true}),
		"command": testbin.Path(t, testbin.Bin{Pkg: "cmd/agenthost/testdata/chatty", Name: "command.wasm", Wasm: true}),
	}
}

// chattyEnv is a manifest whose model calls the chatty tool once, then answers.
func chattyEnv(t *testing.T) *agentEnv {
	dir := t.TempDir()
	script := `{"turns": [{"tool_calls": [{"id": "c1", "name": "chatty", "arguments": "{\"steps\":2}"}]}, {"text": "done"}]}`
	os.WriteFile(filepath.Join(dir, "s.json"), []byte(script), 0o644)
	manifest := fmt.Sprintf(`[agent]
provider = "scripted"
[providers.scripted]
command = %q
options = { script = "s.json" }
[store]
path = "sessions.db"
[[plugins]]
name = "chatty"
wasm = %q
`, filepath.Join(binDir, "agenthost-provider-scripted"), authorPlugins(t)["chatty"])
	p := filepath.Join(dir, "agent.toml")
	os.WriteFile(p, []byte(manifest), 0o644)
	return &agentEnv{dir: dir, manifest: p}
}

func TestE2E_PluginOutputIsShownAtTheLogLevel(t *testing.T) {
	e := chattyEnv(t)
	r := e.agenthost(t, "run", "talk")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"[chatty] info: a info line\n", "[chatty] error: a error line\n",
		"[chatty] progress 1/2 step 1\n", "[chatty] progress 2/2 step 2\n"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("default transcript lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "debug") {
		t.Errorf("debug lines shown at the default level:\n%s", r.stderr)
	}
	r = e.agenthost(t, "run", "--log-level", "debug", "talk")
	for _, want := range []string{"[chatty] debug: a debug line\n", "[chatty] debug: [stdout] printed to stdout\n",
		"[chatty] debug: [stderr] printed to stderr\n"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("--log-level debug lacks %q:\n%s", want, r.stderr)
		}
	}
	r = e.agenthost(t, "run", "--log-level", "error", "talk")
	if strings.Contains(r.stderr, "warning") || strings.Contains(r.stderr, "progress") || !strings.Contains(r.stderr, "a error line") {
		t.Errorf("--log-level error:\n%s", r.stderr)
	}
	if r = e.agenthost(t, "run", "--log-level", "loud", "talk"); r.code != 2 || !strings.Contains(r.stderr, "want one of debug, info") {
		t.Errorf("bad --log-level: exit %d %s", r.code, r.stderr)
	}
}

func TestE2E_PluginOutputIsInJSONAndStored(t *testing.T) {
	e := chattyEnv(t)
	r := e.agenthost(t, "run", "--json", "talk")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	live := events(t, r.stdout)
	want := []string{"tool_call", "plugin_log", "plugin_log", "plugin_log", "plugin_log", "plugin_log",
		"progress", "progress", "plugin_log", "plugin_log", "tool_result:c1=said everything"}
	got := shape(live)
	start := 0
	for start < len(got) && got[start] != "tool_call" {
		start++
	}
	equalStrings(t, "events of the call", got[start:start+len(want)], want)
	var lines []string
	for _, ev := range live {
		if d, ok := ev.Data.(*loop.PluginLogData); ok {
			lines = append(lines, d.Plugin+"/"+d.Level+"/"+d.Message)
		}
	}
	equalStrings(t, "plugin_log", lines, []string{"chatty/debug/a debug line", "chatty/info/a info line",
		"chatty/notice/a notice line", "chatty/warning/a warning line", "chatty/error/a error line",
		"chatty/debug/[stdout] printed to stdout", "chatty/debug/[stderr] printed to stderr"})

	show := e.agenthost(t, "sessions", "show", sessionOf(t, live), "--json")
	var stored []string
	for _, ev := range events(t, show.stdout) {
		if ev.Type == loop.EventPluginLog || ev.Type == loop.EventProgress {
			stored = append(stored, fmt.Sprintf("%d:%s", ev.Seq, ev.Type))
		}
	}
	var emitted []string
	for _, ev := range live {
		if ev.Type == loop.EventPluginLog || ev.Type == loop.EventProgress {
			emitted = append(emitted, fmt.Sprintf("%d:%s", ev.Seq, ev.Type))
		}
	}
	equalStrings(t, "stored reports", stored, emitted)
}

func TestE2E_PluginsCallOnABarePath(t *testing.T) {
	dir := t.TempDir()
	e := &agentEnv{dir: dir, manifest: filepath.Join(dir, "absent.toml")} // no manifest is read
	r := e.agenthost(t, "plugins", "call", calcWasm, "calc", `{"expression":"6*7"}`)
	if r.code != 0 || !strings.Contains(r.stdout, `"text": "42"`) {
		t.Fatalf("bare call: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	// Refused exactly as a run refuses: the schema names the field; {} is the default.
	r = e.agenthost(t, "plugins", "call", calcWasm, "calc", `{"expression":6}`)
	if r.code != 2 || !strings.Contains(r.stderr, "invalid arguments for tool 'calc': /expression: got number, want string") {
		t.Fatalf("schema refusal: exit %d %q", r.code, r.stderr)
	}
	r = e.agenthost(t, "plugins", "call", calcWasm, "calc")
	if r.code != 2 || !strings.Contains(r.stderr, "missing property 'expression'") {
		t.Fatalf("default {}: exit %d %q", r.code, r.stderr)
	}
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "plugins", "call", calcWasm, "calc", "-")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(`{"expression":"1+1"}` + "\n")
	if out, err := cmd.Output(); err != nil || !strings.Contains(string(out), `"text": "2"`) {
		t.Fatalf("stdin: %v %s", err, out)
	}
	// Plugin output goes to stderr; the result alone to stdout.
	r = e.agenthost(t, "plugins", "call", authorPlugins(t)["chatty"], "chatty", `{"steps":1}`)
	if r.code != 0 || !strings.Contains(r.stderr, "[chatty] debug: [stdout] printed to stdout") || strings.Contains(r.stdout, "printed") {
		t.Fatalf("chatty: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	if r = e.agenthost(t, "plugins", "call", calcWasm, "calc", "--memory", "lots", "{}"); r.code != 2 || !strings.Contains(r.stderr, "--memory") {
		t.Fatalf("bad --memory: exit %d %s", r.code, r.stderr)
	}
}

func TestE2E_PluginsCallBarePathPermissionsComeFromFlags(t *testing.T) {
	data := t.TempDir()
	os.WriteFile(filepath.Join(data, "notes.txt"), []byte("remember the milk"), 0o644)
	files := filepath.Join(repoRoot, "plugins/examples/go/files/files.wasm")
	e := &agentEnv{dir: t.TempDir(), manifest: "absent.toml"}
	args := `{"path":"/data/notes.txt"}`
	r := e.agenthost(t, "plugins", "call", files, "read_file", args)
	if r.code != 1 || strings.Contains(r.stdout, "milk") {
		t.Fatalf("without --allow-path the file was read: exit %d %s", r.code, r.stdout)
	}
	r = e.agenthost(t, "plugins", "call", "--allow-path", "ro:"+data+":/data", files, "read_file", args)
	if r.code != 0 || !strings.Contains(r.stdout, "remember the milk") {
		t.Fatalf("with --allow-path: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
}

func TestE2E_PluginsCallNeedsNoProvider(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "agent.toml")
	os.WriteFile(p, []byte(fmt.Sprintf("[store]\nkind = \"memory\"\n[[plugins]]\nname = \"calc\"\nwasm = %q\n", calcWasm)), 0o644)
	e := &agentEnv{dir: dir, manifest: p}
	if r := e.agenthost(t, "plugins", "call", "calc", "calc", `{"expression":"2+2"}`); r.code != 0 || !strings.Contains(r.stdout, `"text": "4"`) {
		t.Fatalf("call without a provider: exit %d %s", r.code, r.stderr)
	}
	if r := e.agenthost(t, "run", "hi"); r.code != 2 || !strings.Contains(r.stderr, "no provider: set agent.provider") {
		t.Fatalf("run without a provider: exit %d %s", r.code, r.stderr)
	}
	if r := e.agenthost(t, "plugins", "call", "--memory", "1MiB", "calc", "calc"); r.code != 2 || !strings.Contains(r.stderr, "a manifest plugin has the manifest's permissions") {
		t.Fatalf("permission flag on a manifest plugin: exit %d %s", r.code, r.stderr)
	}
}

func TestE2E_BrokenPluginBuildsNameTheFix(t *testing.T) {
	w := authorPlugins(t)
	e := &agentEnv{dir: t.TempDir(), manifest: "absent.toml"}
	r := e.agenthost(t, "plugins", "call", w["notools"], "lonely")
	if r.code != 2 || !strings.Contains(r.stderr, `declares no tools`) || !strings.Contains(r.stderr, `plugins/sdk/exports/mcptool`) {
		t.Fatalf("no tools: exit %d %s", r.code, r.stderr)
	}
	r = e.agenthost(t, "plugins", "call", w["command"], "chatty")
	if r.code != 2 || !strings.Contains(r.stderr, "-buildmode=c-shared") {
		t.Fatalf("command module: exit %d %s", r.code, r.stderr)
	}
}
