package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeManifest writes body as agent.toml next to a fake wasm file and provider binary.
func writeManifest(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "calc.wasm"), []byte("\x00asm fake"), 0o644))
	must(t, os.MkdirAll(filepath.Join(dir, "bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "bin", "prov"), []byte("#!/bin/sh\n"), 0o755))
	must(t, os.MkdirAll(filepath.Join(dir, "data"), 0o755))
	p := filepath.Join(dir, "agent.toml")
	must(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

const goodManifest = `# a comment
[agent]
name = "assistant"
system_prompt = "Be careful."
provider = "scripted"
model = "demo"
max_iterations = 7
[agent.tool_policy]
max_parallel = 4
require_approval = ["fs_write"]
timeout = "3s"

[providers.scripted]
command = "bin/prov"
options = { script = "${AGENTHOST_TEST_SCRIPT}" }

[store]
kind = "memory"

[[plugins]]
name = "calc"
wasm = "calc.wasm"
[plugins.permissions]
memory = "32MiB"
timeout = "2s"
max_input = "1 MiB"
allowed_paths = { "ro:data" = "/data" }

[[plugins]]
name = "vowels"
abi = "extism"
wasm = "calc.wasm"
[[plugins.tools]]
name = "count_vowels"
input = "text"
input_schema = '{"type":"object","properties":{"text":{"type":"string"}}}'
[[plugins.tools]]
name = "count_words"
input_schema = { type = "object", properties = { text = { type = "string" } } }
`

func TestPluginConfigExpandsVariablesAsProviderOptionsDo(t *testing.T) {
	t.Setenv("AGENTHOST_TEST_SCRIPT", "demo.json")
	t.Setenv("AGENTHOST_TEST_KEY", "s3cret")
	p := writeManifest(t, strings.Replace(goodManifest, `max_input = "1 MiB"`,
		`max_input = "1 MiB"`+"\nconfig = { api_key = \"${AGENTHOST_TEST_KEY}\", unset = \"[${AGENTHOST_TEST_UNSET}]\" }", 1))
	m, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if c := m.Plugins[0].Permissions.Config; c["api_key"] != "s3cret" || c["unset"] != "[]" {
		t.Fatalf("config = %v", c)
	}
}

func TestLoadManifestDecodesAndResolves(t *testing.T) {
	t.Setenv("AGENTHOST_TEST_SCRIPT", "demo.json")
	p := writeManifest(t, goodManifest)
	m, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(p)
	if m.Agent.Name != "assistant" || m.Agent.MaxIterations != 7 || m.Agent.ToolPolicy.MaxParallel != 4 ||
		time.Duration(m.Agent.ToolPolicy.Timeout) != 3*time.Second {
		t.Fatalf("agent = %+v", m.Agent)
	}
	prov := m.Providers["scripted"]
	if prov.Command != filepath.Join(dir, "bin/prov") || prov.Options["script"] != "demo.json" {
		t.Fatalf("provider = %+v", prov)
	}
	calc := m.Plugins[0]
	if calc.Kind != "tool" || calc.Wasm != filepath.Join(dir, "calc.wasm") || calc.Permissions.Memory != 32<<20 ||
		calc.Permissions.MaxInput != 1<<20 || time.Duration(calc.Permissions.Timeout) != 2*time.Second {
		t.Fatalf("calc = %+v", calc)
	}
	if got := calc.Permissions.AllowedPaths["ro:"+filepath.Join(dir, "data")]; got != "/data" {
		t.Fatalf("allowed_paths = %v", calc.Permissions.AllowedPaths)
	}
	tools := m.Plugins[1].Tools
	if string(tools[0].InputSchema) != `{"type":"object","properties":{"text":{"type":"string"}}}` ||
		string(tools[1].InputSchema) != `{"properties":{"text":{"type":"string"}},"type":"object"}` {
		t.Fatalf("schemas %s / %s", tools[0].InputSchema, tools[1].InputSchema)
	}
	if m.Store.Kind != "memory" {
		t.Fatalf("store %+v", m.Store)
	}
}

func TestManifestErrorsNameFileLineAndKey(t *testing.T) {
	sum := sha256.Sum256([]byte("\x00asm fake"))
	good := hex.EncodeToString(sum[:])
	bad := strings.Repeat("0", 64)
	for _, tc := range []struct {
		name    string
		replace [2]string // edit of goodManifest
		line    int
		key     string
		msg     string
	}{
		{"unknown key", [2]string{`timeout = "2s"`, `timeout = "2s"` + "\nmemroy = 1"}, 26, "plugins.permissions.memroy", `unknown key (did you mean "memory"?)`},
		{"unknown top key", [2]string{"# a comment", "colour = 1"}, 1, "colour", "unknown key"},
		{"unknown provider key", [2]string{`[providers.scripted]`, "[providers.scripted]\ncomand = \"x\""}, 14, "providers.scripted.comand", `unknown key (did you mean "command"?)`},
		{"unknown agent key", [2]string{"max_iterations = 7", "max_iteration = 7"}, 7, "agent.max_iteration", `unknown key (did you mean "max_iterations"?)`},
		{"unknown tool key", [2]string{`name = "count_words"`, `name = "count_words"` + "\ndescripton = \"x\""}, 39, "plugins.tools.descripton", `(did you mean "description"?)`},
		{"bad size", [2]string{`memory = "32MiB"`, `memory = "32 MBs"`}, 24, "plugins.permissions.memory",
			`invalid size "32 MBs": unknown unit "MBs" (B, KB, KiB, MB, MiB, GB, GiB)`},
		{"bad duration", [2]string{`timeout = "2s"`, `timeout = "2 seconds"`}, 25, "plugins.permissions.timeout",
			`invalid duration "2 seconds": want e.g. 2s, 500ms or 30d`},
		{"wrong type", [2]string{"max_iterations = 7", `max_iterations = "seven"`}, 7, "agent.max_iterations", "incompatible types"},
		{"missing file", [2]string{`name = "calc"` + "\nwasm = \"calc.wasm\"", `name = "calc"` + "\nwasm = \"nope.wasm\""}, 22, "plugins[0].wasm",
			"cannot read "},
		{"digest mismatch", [2]string{`name = "calc"`, `name = "calc"` + "\nsha256 = \"" + bad + "\""}, 22, "plugins[0].sha256",
			"digest mismatch for "},
		{"duplicate tool", [2]string{`name = "count_words"`, `name = "count_vowels"`}, 38, "plugins[1].tools[1].name",
			`duplicate tool name "count_vowels" in plugin "vowels"`},
		{"duplicate plugin", [2]string{`name = "vowels"`, `name = "calc"`}, 30, "plugins[1].name", `duplicate plugin name "calc" (also plugins[0])`},
		{"unknown provider", [2]string{`provider = "scripted"`, `provider = "openai"`}, 5, "agent.provider",
			`unknown provider "openai" (defined: scripted)`},
		{"bad kind", [2]string{`name = "calc"`, `name = "calc"` + "\nkind = \"weird\""}, 22, "plugins[0].kind",
			`unknown kind "weird" (one of tool, context, termination, guardrail, permission, planner, evaluator, memory)`},
		{"bad schema string", [2]string{`input_schema = '{"type":"object","properties":{"text":{"type":"string"}}}'`, `input_schema = '{oops'`}, 36,
			"plugins.tools.input_schema", "input_schema is a string but not JSON"},
		{"syntax", [2]string{`model = "demo"`, `model = "demo`}, 6, "agent.model", "strings cannot contain newlines"},
		{"preinit of a wasi command", [2]string{`name = "calc"`, `name = "calc"` + "\nabi = \"wasi\"\npreinit = true"}, 23, "plugins[0].preinit",
			"preinit applies to reactor plugins (abi mcp or extism), not to a wasi command"},
	} {
		t.Run(tc.name, func(t *testing.T) { wantManifestError(t, tc.replace, tc.line, tc.key, tc.msg) })
	}
	// A correct pin loads.
	p := writeManifest(t, strings.Replace(goodManifest, `name = "calc"`, `name = "calc"`+"\nsha256 = \""+good+"\"", 1))
	if _, err := Load(p); err != nil {
		t.Fatalf("good digest: %v", err)
	}
}

// wantManifestError applies edit to goodManifest and checks that loading it fails with
// a ManifestError at file:line: key whose message contains msg.
func wantManifestError(t *testing.T, edit [2]string, line int, key, msg string) {
	t.Helper()
	body := strings.Replace(goodManifest, edit[0], edit[1], 1)
	if body == goodManifest {
		t.Fatal("edit did not apply")
	}
	p := writeManifest(t, body)
	_, err := Load(p)
	var me *Error
	if !errors.As(err, &me) {
		t.Fatalf("err = %v (%T), want a ManifestError", err, err)
	}
	if me.File != p || me.Line != line || me.Key != key || !strings.Contains(me.Msg, msg) {
		t.Fatalf("got %s:%d key %q msg %q\nwant line %d key %q msg containing %q", me.File, me.Line, me.Key, me.Msg, line, key, msg)
	}
	if !strings.HasPrefix(err.Error(), p+":") {
		t.Fatalf("message %q does not start with the file", err)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]uint64{"32MiB": 32 << 20, "1 MiB": 1 << 20, "512KiB": 512 << 10, "1GB": 1e9, "100": 100, "7b": 7} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Fatalf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if _, err := ParseSize("MiB"); err == nil || err.Error() != `invalid size "MiB": want a number with a unit such as 32MiB` {
		t.Fatalf("err %v", err)
	}
}

func TestManifestApprovalDefaultReachesTheLoopPolicy(t *testing.T) {
	t.Setenv("AGENTHOST_TEST_SCRIPT", "demo.json")
	src := strings.Replace(goodManifest, `require_approval = ["fs_write"]`, "require_approval = [\"*\"]\napproval_default = \"deny\"", 1)
	m, err := Load(writeManifest(t, src))
	if err != nil {
		t.Fatal(err)
	}
	if tp := m.Agent.ToolPolicy; tp.ApprovalDefault != "deny" || len(tp.RequireApproval) != 1 || tp.RequireApproval[0] != "*" {
		t.Fatalf("tool policy %+v", tp)
	}
}

// TestManifestPinOfAFIFOIsRefusedNotWaitedOn: a pinned provider command that is a named
// pipe is a file:line: key error at once; reading it to hash it would wait for a writer
// and the manifest would never load.
func TestManifestPinOfAFIFOIsRefusedNotWaitedOn(t *testing.T) {
	body := strings.Replace(goodManifest, `command = "bin/prov"`, `command = "bin/fifo"`+"\nsha256 = \""+strings.Repeat("0", 64)+"\"", 1)
	p := writeManifest(t, body)
	if err := syscall.Mkfifo(filepath.Join(filepath.Dir(p), "bin", "fifo"), 0o700); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := Load(p); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), ": providers.scripted.sha256: cannot check the digest of ") ||
			!strings.Contains(err.Error(), "not a regular file (mode p") {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(10 * time.Second):
		if f, err := os.OpenFile(filepath.Join(filepath.Dir(p), "bin", "fifo"), os.O_WRONLY, 0); err == nil {
			f.Close() // let the blocked reader go
		}
		t.Fatal("Load blocked on the FIFO")
	}
}

// TestManifestMCPServerMaxOutputIsASizeLikePlugins: [[mcp_servers]] max_output is read as
// plugins' is ("2MiB"), is unset (the 1 MiB default) when left out, and a bad value is a
// file:line: key error.
func TestManifestMCPServerMaxOutputIsASizeLikePlugins(t *testing.T) {
	entry := "\n[[mcp_servers]]\nname = \"remote\"\nurl = \"http://127.0.0.1:1/mcp\"\n"
	m, err := Load(writeManifest(t, goodManifest+entry+"max_output = \"2MiB\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.MCPServers[0].MaxOutput; got != 2<<20 {
		t.Fatalf("max_output = %d, want 2 MiB", got)
	}
	if m, err := Load(writeManifest(t, goodManifest+entry)); err != nil || m.MCPServers[0].MaxOutput != 0 {
		t.Fatalf("without max_output: %v, %d", err, m.MCPServers[0].MaxOutput)
	}
	_, err = Load(writeManifest(t, goodManifest+entry+"max_output = \"lots\"\n"))
	if err == nil || !strings.Contains(err.Error(), "mcp_servers.max_output: invalid size \"lots\"") {
		t.Fatalf("bad max_output: %v", err)
	}
}

// A plugin cannot take a name under which the host keeps state in the key/value table
// (a plugin's kv is keyed by its name).
func TestAPluginCannotTakeTheHostsStateNamespace(t *testing.T) {
	_, err := Parse("agent.toml", []byte("[agent]\nname = \"a\"\nprovider = \"p\"\n[providers.p]\ncommand = \"x\"\n[[plugins]]\nname = \"agenthost/workflows\"\nwasm = \"x.wasm\"\n"))
	if err == nil || !strings.Contains(err.Error(), `plugin names starting "agenthost/" are the host's ("agenthost/workflows")`) {
		t.Fatalf("err = %v", err)
	}
}

// [auth.oidc] mistakes name the key, like every other manifest error.
func TestManifestAuthOIDCErrorsNameTheKey(t *testing.T) {
	wantManifestError(t, [2]string{"# a comment", "[auth.oidc]\nissuer = \"https://idp.test\"\naudience = \"a\"\njwks_url = \"ftp://idp.test/keys\""}, 4,
		"auth.oidc.jwks_url", `"ftp://idp.test/keys" is not an http(s) URL`)
	wantManifestError(t, [2]string{"# a comment", "[auth.oidc]\naudience = \"a\"\njwks_file = \"k.json\""}, 1, "auth.oidc.issuer", "required")
}

func TestManifestRefusesUnknownIsolation(t *testing.T) {
	body := goodManifest + "\n[[plugins]]\nname = \"x\"\nwasm = \"calc.wasm\"\n[plugins.permissions]\nisolation = \"shared\"\n"
	_, err := Load(writeManifest(t, body))
	var me *Error
	if !errors.As(err, &me) || me.Line != strings.Count(body, "\n") || me.Key != "plugins[2].permissions.isolation" ||
		me.Msg != `unknown isolation "shared" (pooled, session or call)` {
		t.Fatalf("got %v", err)
	}
}

// An [[a2a_agents]] url is an http(s) URL: a file URL is refused (moved from
// a2abridge with the check).
func TestA2AAgentURLMustBeHTTP(t *testing.T) {
	if err := checkA2AURL("file:///etc/passwd"); err == nil {
		t.Error("a file URL was taken")
	}
}
