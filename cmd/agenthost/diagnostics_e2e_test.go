package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// extismModule is the smallest module the extism ABI loads: one export, name, of type
// () -> i32 that returns 0. Its tools are declared in the manifest, so a test can give
// one any input_schema without a toolchain.
func extismModule(name string) []byte {
	sec := func(id byte, body []byte) []byte { return append([]byte{id, byte(len(body))}, body...) }
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, sec(1, []byte{1, 0x60, 0, 1, 0x7f})...) // type 0: () -> i32
	m = append(m, sec(3, []byte{1, 0})...)                // func 0 has type 0
	export := append(append([]byte{1, byte(len(name))}, name...), 0, 0)
	m = append(m, sec(7, export)...)                          // export name = func 0
	m = append(m, sec(10, []byte{1, 4, 0, 0x41, 0, 0x0b})...) // i32.const 0; end
	return m
}

// A tool whose input_schema does not compile fails plugins verify (exit 1, naming the
// plugin and the tool) even when no agent of the run offers it, so loading alone never
// compiles it: here only [agents.other] uses it.
func TestE2E_VerifyFailsAToolWithAnInvalidInputSchema(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "echo.wasm"), extismModule("echo"), 0o644)
	manifest := func(schema string) *agentEnv {
		e := &agentEnv{dir: dir, manifest: filepath.Join(dir, "agent.toml")}
		os.WriteFile(e.manifest, []byte(`[agent]
name = "main"
provider = "p"
tools = []

[agents.other]
tools = ["echo"]

[providers.p]
command = "true"

[store]
kind = "memory"

[[plugins]]
name = "echo"
abi = "extism"
wasm = "echo.wasm"
[[plugins.tools]]
name = "echo"
input_schema = `+schema+"\n"), 0o644)
		return e
	}
	e := manifest(`{ type = "object" }`)
	if r := e.agenthost(t, "plugins", "verify"); r.code != 0 || !strings.HasPrefix(r.stdout, "ok  echo (extism, 1 tool") {
		t.Fatalf("valid schema: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	e = manifest(`{ type = "objekt" }`)
	r := e.agenthost(t, "plugins", "verify")
	if r.code != 1 || !strings.HasPrefix(r.stdout, `FAIL echo (extism, 1 tool, not pinned): tool "echo": input schema`) ||
		!strings.Contains(r.stderr, "1 of 1 plugins failed verification") {
		t.Fatalf("invalid schema: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	r = e.agenthost(t, "plugins", "verify", "--json")
	var checks []pluginCheck
	if err := json.Unmarshal([]byte(r.stdout), &checks); err != nil || r.code != 1 || len(checks) != 1 || checks[0].OK ||
		!strings.Contains(checks[0].Error, "input schema") {
		t.Fatalf("verify --json: exit %d %v %s", r.code, err, r.stdout)
	}
}

// In a directory with no agent.toml, the error says how to get one.
func TestE2E_MissingManifestHintsInit(t *testing.T) {
	dir := t.TempDir()
	e := &agentEnv{dir: dir, manifest: "agent.toml"}
	r := e.agenthost(t, "run", "hello")
	if r.code != 2 || !strings.Contains(r.stderr, "no such file") || !strings.Contains(r.stderr, `"agenthost init" writes a starter one`) {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
	r = e.agenthost(t, "-c", "elsewhere.toml", "plugins", "list")
	if r.code != 2 || !strings.Contains(r.stderr, `"agenthost -c elsewhere.toml init"`) {
		t.Fatalf("-c: exit %d, stderr %s", r.code, r.stderr)
	}
}

// plugins call naming a tool or plugin that is not there is a usage error (exit 2) that
// lists what there is.
func TestE2E_CallUnknownToolIsUsageError(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "unused"}]}`})
	r := e.agenthost(t, "plugins", "call", "calc", "calk", `{"expression":"1"}`)
	if r.code != 2 || !strings.Contains(r.stderr, `plugin "calc" has no tool "calk" (its tools: calc)`) {
		t.Fatalf("unknown tool: exit %d %s", r.code, r.stderr)
	}
	r = e.agenthost(t, "plugins", "call", "clac", "calc")
	if r.code != 2 || !strings.Contains(r.stderr, `no plugin "clac"`) || !strings.Contains(r.stderr, "(plugins: calc)") {
		t.Fatalf("unknown plugin: exit %d %s", r.code, r.stderr)
	}
}

// A TOML syntax error names the line it is on, also when the decoder notices it at that
// line's end (an unclosed [[table] header, reported one line late before).
func TestE2E_TOMLSyntaxErrorNamesItsLine(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		body string
		line string
	}{
		{"[agent]\nname = \"x\"\n\n[store]\nkind = \"memory\"\n[[plugins]\nname = \"a\"\n", ":6: "},
		{"[agent]\nname = \"x\"\n[agent\nprovider = \"p\"\n", ":3: "},
		{"[agent]\nname = \"x\"\nmax_iterations = \n", ":3: "},
	} {
		p := filepath.Join(dir, "agent.toml")
		os.WriteFile(p, []byte(c.body), 0o644)
		r := (&agentEnv{dir: dir, manifest: p}).agenthost(t, "plugins", "list")
		if r.code != 2 || !strings.Contains(r.stderr, p+c.line) {
			t.Errorf("want %s%s in: exit %d %s\n%s", p, c.line, r.code, r.stderr, c.body)
		}
	}
}
