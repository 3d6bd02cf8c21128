package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
)

func copyFile(t *testing.T, from, to string, mod time.Time) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(to, mod, mod)
}

// A rebuilt .wasm is swapped in between runs: the next run offers its tools, a broken
// rebuild leaves the running plugin alone, and the replaced plugin is closed.
func TestReloadSwapsARebuiltPluginBetweenRuns(t *testing.T) {
	probePlugin(t, "", "") // builds probe.wasm
	dir := t.TempDir()
	wasm := filepath.Join(dir, "p.wasm")
	copyFile(t, calcWasm, wasm, time.Now().Add(-time.Hour))
	// One story over three sessions' runs: one turn sequence for the process.
	h := openHost(t, `{"per_session": false, "turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]},
	  {"text": "calc said {{result c1}}"},
	  {"tool_calls": [{"id": "c2", "name": "calc", "arguments": "{\"expression\":\"1+1\"}"}, {"id": "c3", "name": "counter", "arguments": "{}"}]},
	  {"text": "{{result c2}} / {{result c3}}"},
	  {"tool_calls": [{"id": "c4", "name": "counter", "arguments": "{}"}]},
	  {"text": "still {{result c4}}"}]}`,
		"[[plugins]]\nname = \"p\"\nwasm = "+`"`+wasm+`"`+"\n", Options{})
	runner := h.Runner()
	run := func(session string) loop.RunResult {
		t.Helper()
		res, _ := runner.RunWith(context.Background(), loop.RunInput{SessionID: session, Messages: []loop.Message{loop.UserMessage("go")}}, nil)
		return res
	}
	if names, err := h.Reload(context.Background()); err != nil || names != nil {
		t.Fatalf("reload with nothing changed: %v %v", names, err)
	}
	if res := run("s1"); res.Final.Text() != "calc said 42" {
		t.Fatalf("run 1: %q %v", res.Final.Text(), res.Err)
	}
	oldAgent := h.Agent
	copyFile(t, probe.path, wasm, time.Now())
	names, err := h.Reload(context.Background())
	if err != nil || strings.Join(names, ",") != "p" {
		t.Fatalf("reload: %v %v", names, err)
	}
	if h.Agent == oldAgent {
		t.Fatal("the agent was not replaced")
	}
	if res := run("s2"); res.Final.Text() != "Error: Unknown tool 'calc' / 1" {
		t.Fatalf("run 2 on the rebuilt plugin: %q %v", res.Final.Text(), res.Err)
	}
	if len(h.live.retired) != 0 {
		t.Fatalf("the replaced plugin is still held: %d retired agents", len(h.live.retired))
	}
	// A broken rebuild: the error names the plugin, and the running one stays.
	os.WriteFile(wasm, []byte("\x00asm half a build"), 0o644)
	if _, err := h.Reload(context.Background()); err == nil || !strings.Contains(err.Error(), "plugins[0]") {
		t.Fatalf("broken rebuild: %v", err)
	}
	if res := run("s3"); res.Final.Text() != "still 1" {
		t.Fatalf("run 3 after a failed reload: %q %v", res.Final.Text(), res.Err)
	}
}

// NextReload reloads a changed file once it has stopped changing for an interval (two
// polls see the same size and time), and returns the plugins it reloaded.
func TestNextReloadWaitsForTheFileToSettle(t *testing.T) {
	probePlugin(t, "", "")
	dir := t.TempDir()
	wasm := filepath.Join(dir, "p.wasm")
	copyFile(t, calcWasm, wasm, time.Now().Add(-time.Hour))
	h := openHost(t, `{"turns": []}`, "[[plugins]]\nname = \"p\"\nwasm = "+`"`+wasm+`"`+"\n", Options{})
	// The rebuild lands whole (written beside, then renamed), as a build tool's output
	// does: a copy written in place could be caught half-way for longer than the interval
	// on a loaded machine, which is a real half build, not what this test is about.
	tmp := wasm + ".tmp"
	copyFile(t, probe.path, tmp, time.Now())
	if err := os.Rename(tmp, wasm); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	names, err := h.NextReload(ctx, 20*time.Millisecond)
	if err != nil || strings.Join(names, ",") != "p" {
		t.Fatalf("NextReload: %v %v", names, err)
	}
	if _, ok := h.Plugin("p"); !ok || len(h.ModelToolNames()["p"]) < 2 {
		t.Fatalf("tools after reload: %v", h.ModelToolNames())
	}
}

// A sha256 pin holds for the bytes compiled, not for the file as the manifest saw it:
// a module swapped after the manifest's check, at Open or before a Reload, is refused
// with an error naming the plugin (the sandbox checks the bytes it read).
func TestPinnedPluginSwappedAfterTheManifestCheckIsRefused(t *testing.T) {
	probePlugin(t, "", "") // builds probe.wasm
	dir := t.TempDir()
	wasm := filepath.Join(dir, "p.wasm")
	copyFile(t, calcWasm, wasm, time.Now().Add(-time.Hour))
	calc, _ := os.ReadFile(calcWasm)
	sum := sha256.Sum256(calc)
	plugins := "[[plugins]]\nname = \"p\"\nwasm = " + `"` + wasm + `"` + "\nsha256 = \"" + hex.EncodeToString(sum[:]) + "\"\n"

	// Open: the manifest checked the pin, then the file changed.
	script := filepath.Join(dir, "script.json")
	os.WriteFile(script, []byte(`{"turns": []}`), 0o644)
	path := filepath.Join(dir, "agent.toml")
	os.WriteFile(path, []byte(fmt.Sprintf("[agent]\nprovider = \"scripted\"\nmodel = \"m1\"\n[providers.scripted]\ncommand = %q\n"+
		"options = { script = \"script.json\" }\n[store]\nkind = \"memory\"\n%s", scriptedBin, plugins)), 0o644)
	m, err := manifest.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	copyFile(t, probe.path, wasm, time.Now().Add(-time.Hour))
	if h, err := Open(context.Background(), Options{Loaded: m, CacheDir: wasmCache}); err == nil {
		h.Close()
		t.Fatal("a module swapped after the manifest's check was loaded")
	} else if !strings.Contains(err.Error(), "plugins[0]") || !strings.Contains(err.Error(), `load plugin "p": digest mismatch for `+wasm) {
		t.Fatalf("swapped before Open: %v", err)
	}

	// Reload: the pinned module is running, and a rebuild that does not match is refused.
	copyFile(t, calcWasm, wasm, time.Now().Add(-time.Hour))
	h := openHost(t, `{"turns": []}`, plugins, Options{})
	copyFile(t, probe.path, wasm, time.Now())
	if _, err := h.Reload(context.Background()); err == nil || !strings.Contains(err.Error(), "plugins[0]") ||
		!strings.Contains(err.Error(), `load plugin "p": digest mismatch for `+wasm) {
		t.Fatalf("reload of a module that does not match its pin: %v", err)
	}
}
