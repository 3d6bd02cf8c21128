package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `plugins new` for every language: the scaffold builds with the toolchains `make deps`
// installs, answers `plugins call` at once, and its manifest snippet loads.
func TestE2E_PluginsNewScaffoldsBuildAndAnswerInEveryLanguage(t *testing.T) {
	work := t.TempDir()
	e := &agentEnv{dir: work, manifest: filepath.Join(work, "agent.toml")}
	var snippets []string
	want := map[string]string{
		"go": "Hello, world!", "c": "Hello, world!", "rust": "Hello, world!",
		"assemblyscript": "Hello, world!", "wat": `got: {\"text\":\"world\"}`,
	}
	for _, lang := range scaffoldLangs {
		name := "my_" + lang
		r := e.agenthost(t, "plugins", "new", lang, name)
		if r.code != 0 || !strings.Contains(r.stdout, "[[plugins]]") {
			t.Fatalf("new %s: exit %d %s %s", lang, r.code, r.stdout, r.stderr)
		}
		dir := filepath.Join(work, name)
		if lang == "assemblyscript" { // the compiler `make deps` installed, not a second download
			os.Symlink(filepath.Join(repoRoot, "plugins/examples/assemblyscript/node_modules"), filepath.Join(dir, "node_modules"))
		}
		build := exec.Command("sh", "build.sh")
		build.Dir = dir
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", lang, err, out)
		}
		r = e.agenthost(t, "plugins", "call", filepath.Join(dir, name+".wasm"), name, `{"text":"world"}`)
		if r.code != 0 || !strings.Contains(r.stdout, want[lang]) {
			t.Fatalf("call %s: exit %d\n%s\n%s", lang, r.code, r.stdout, r.stderr)
		}
		if lang != "wat" && lang != "go" {
			checkScaffoldHelper(t, e, filepath.Join(dir, name+".wasm"), name)
		}
		snippet, err := os.ReadFile(filepath.Join(dir, "manifest.toml"))
		if err != nil {
			t.Fatal(err)
		}
		snippets = append(snippets, string(snippet))
	}
	// Every snippet, pasted into one manifest, loads; the tools are the names the model sees.
	os.WriteFile(e.manifest, []byte("[store]\nkind = \"memory\"\n"+strings.Join(snippets, "\n")), 0o644)
	r := e.agenthost(t, "plugins", "list")
	if r.code != 0 {
		t.Fatalf("list: %s", r.stderr)
	}
	for _, lang := range scaffoldLangs {
		if !strings.Contains(r.stdout, "my_"+lang) {
			t.Errorf("plugins list lacks my_%s:\n%s", lang, r.stdout)
		}
	}
	r = e.agenthost(t, "plugins", "call", "my_c", "my_c", `{"text":"via the manifest"}`)
	if r.code != 0 || !strings.Contains(r.stdout, "via the manifest") {
		t.Fatalf("manifest call: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	// The scaffold refuses to overwrite, and names what it accepts.
	if r = e.agenthost(t, "plugins", "new", "go", "my_go"); r.code != 2 || !strings.Contains(r.stderr, "not empty") {
		t.Fatalf("overwrite: exit %d %s", r.code, r.stderr)
	}
	for _, bad := range [][]string{{"cobol", "x"}, {"go", "Bad-Name"}, {"go", "../escape"}} {
		if r = e.agenthost(t, "plugins", "new", bad[0], bad[1]); r.code != 2 {
			t.Fatalf("new %v: exit %d", bad, r.code)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "..", "escape")); err == nil {
		t.Fatal("a name with .. wrote outside the working directory")
	}

}

// The files `plugins new` writes name no absolute path, so a scaffold committed with its
// manifest or moved elsewhere still loads: the snippet's wasm path is relative to the
// manifest (-c) that it is meant for, whatever --dir says.
func TestE2E_PluginsNewWritesNoAbsolutePathsAndMovesWithTheManifest(t *testing.T) {
	work := t.TempDir()
	e := &agentEnv{dir: work, manifest: filepath.Join(work, "agent.toml")}
	for _, lang := range scaffoldLangs {
		name := "my_" + lang
		dir := filepath.Join(work, "plugins", name) // absolute on purpose
		if r := e.agenthost(t, "plugins", "new", lang, name, "--dir", dir); r.code != 0 {
			t.Fatalf("new %s: exit %d %s", lang, r.code, r.stderr)
		}
	}
	// A manifest in a subdirectory gets a path that climbs out of it.
	sub := &agentEnv{dir: work, manifest: filepath.Join(work, "conf", "agent.toml")}
	if r := sub.agenthost(t, "plugins", "new", "wat", "from_sub", "--dir", filepath.Join(work, "from_sub")); r.code != 0 {
		t.Fatalf("new from_sub: exit %d %s", r.code, r.stderr)
	}
	snippet, _ := os.ReadFile(filepath.Join(work, "from_sub", "manifest.toml"))
	if !strings.Contains(string(snippet), `wasm = "../from_sub/from_sub.wasm"`) {
		t.Errorf("snippet for a manifest in conf/:\n%s", snippet)
	}
	filepath.Walk(work, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), work) {
			t.Errorf("%s names the absolute directory %s", p, work)
		}
		return nil
	})
	// Moved to another directory, with the plugin built (calc stands in for my_go), the
	// snippet pasted as it is still loads the plugin.
	snippet, err := os.ReadFile(filepath.Join(work, "plugins", "my_go", "manifest.toml"))
	if err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(calcWasm)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(work, "plugins", "my_go", "my_go.wasm"), wasm, 0o644)
	moved := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Rename(work, moved); err != nil {
		t.Fatal(err)
	}
	e = &agentEnv{dir: moved, manifest: filepath.Join(moved, "agent.toml")}
	os.WriteFile(e.manifest, []byte("[store]\nkind = \"memory\"\n"+string(snippet)), 0o644)
	if r := e.agenthost(t, "plugins", "list"); r.code != 0 || !strings.Contains(r.stdout, "my_go") {
		t.Fatalf("moved scaffold: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// checkScaffoldHelper calls a C, Rust or AssemblyScript scaffold, which reads its
// argument with the helper library written beside it (agenthost.h, agenthost.rs,
// agenthost.ts), with what a model may send: the argument after a nested value holding
// a brace in a string, escapes (a \u surrogate pair, a quote), a missing argument, one
// of another type. The helper decodes the string exactly and says what is wrong.
func checkScaffoldHelper(t *testing.T, e *agentEnv, wasm, name string) {
	t.Helper()
	r := e.agenthost(t, "plugins", "call", wasm, name, `{"a":[1,{"b":"}"}],"text":"w\u00e9\ud83d\ude00 \"q\""}`)
	if r.code != 0 || !strings.Contains(r.stdout, `"text": "Hello, wé😀 \"q\"!"`) {
		t.Fatalf("%s with escapes: exit %d\n%s\n%s", name, r.code, r.stdout, r.stderr)
	}
	for _, args := range []string{`{}`, `{"text":null}`, `{"text":5}`} {
		r = e.agenthost(t, "plugins", "call", wasm, name, args)
		if r.code != 1 || !strings.Contains(r.stdout, `"isError": true`) || !strings.Contains(r.stdout, `argument \"text\"`) {
			t.Fatalf("%s %s: exit %d, want an error result naming the argument\n%s\n%s", name, args, r.code, r.stdout, r.stderr)
		}
	}
}
