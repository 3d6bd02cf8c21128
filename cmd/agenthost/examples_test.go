package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every example tool plugin, in every language, loads through the host and answers
// `agenthost plugins call` (issue 6). All eight load together from one manifest (its
// first call); each other call reads a manifest of its plugin alone, with the same table,
// so a process loads one plugin instead of all eight (`plugins call` opens every plugin
// of its manifest).
func TestE2E_PluginsCallEveryExample(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello from loopback") }))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	data := filepath.Join(dir, "data") // allowed_paths stay inside the manifest's directory
	os.Mkdir(data, 0o755)
	os.WriteFile(filepath.Join(data, "notes.txt"), []byte("remember the milk"), 0o644)

	ex := func(p string) string { return filepath.Join(repoRoot, "plugins/examples", p) }
	wasi := func(name, lang, tool string) string {
		return fmt.Sprintf(`
[[plugins]]
name = %q
abi = "wasi"
wasm = %q
args = [%q]
[[plugins.tools]]
name = %q
input_schema = { type = "object", properties = { text = { type = "string" } }, required = ["text"] }
`, name, ex(lang+"/"+name+"/"+name+".wasm"), name, tool)
	}
	const head = `[agent]
provider = "none"
[providers.none]
command = "unused"
[store]
kind = "memory"
`
	tables := map[string]string{
		"calc": fmt.Sprintf(`
[[plugins]]
name = "calc"
wasm = %q
`, ex("go/calc/calc.wasm")),
		"text": fmt.Sprintf(`
[[plugins]]
name = "text"
wasm = %q
`, ex("go/text/text.wasm")),
		"http_get": fmt.Sprintf(`
[[plugins]]
name = "http_get"
wasm = %q
[plugins.permissions]
allowed_hosts = [%q]
`, ex("go/http_get/http_get.wasm"), host),
		"files": fmt.Sprintf(`
[[plugins]]
name = "files"
wasm = %q
[plugins.permissions]
allowed_paths = { "ro:data" = "/data" }
`, ex("go/files/files.wasm")),
		"wc":           wasi("wc", "c", "word_count"),
		"sha256":       wasi("sha256", "rust", "sha256"),
		"slugify":      wasi("slugify", "assemblyscript", "slugify"),
		"count_vowels": wasi("count_vowels", "wat", "count_vowels"),
	}
	// envs maps a plugin to the manifest its calls read ("all": every plugin), each in
	// dir, so that files' ro:data mount is the same directory for both.
	envs := map[string]*agentEnv{}
	write := func(name, body string) {
		e := &agentEnv{dir: dir, manifest: filepath.Join(dir, name+".toml")}
		if err := os.WriteFile(e.manifest, []byte(head+body), 0o644); err != nil {
			t.Fatal(err)
		}
		envs[name] = e
	}
	var all strings.Builder
	for _, name := range []string{"calc", "text", "http_get", "files", "wc", "sha256", "slugify", "count_vowels"} {
		all.WriteString(tables[name])
		write(name, tables[name])
	}
	write("all", all.String())
	sum := sha256.Sum256([]byte("abc"))
	for i, tc := range []struct{ plugin, tool, args, want string }{
		{"calc", "calc", `{"expression":"-(1.5 + 2) * 4"}`, "-14"},
		{"text", "word_count", `{"text":"one two\nthree"}`, `{"characters":13,"lines":2,"words":3}`},
		{"text", "regex_extract", `{"text":"a1 b22 c333","pattern":"[0-9]+"}`, `["1","22","333"]`},
		{"text", "json_query", `{"json":"{\"a\":[{\"b\":7}]}","path":"a[0].b"}`, `7`},
		{"http_get", "http_get", fmt.Sprintf(`{"url":%q}`, srv.URL), "hello from loopback"},
		{"files", "read_file", `{"path":"/data/notes.txt"}`, "remember the milk"},
		{"wc", "word_count", `{"text":"one two  three\nfour\n"}`, "4 words, 2 lines, 20 characters"},
		{"sha256", "sha256", `{"text":"abc"}`, hex.EncodeToString(sum[:])},
		{"slugify", "slugify", `{"text":"Hello, World! 2024"}`, "hello-world-2024"},
		{"count_vowels", "count_vowels", `{"text":"Hello, World"}`, "3"},
	} {
		e := envs[tc.plugin]
		if i == 0 {
			e = envs["all"]
		}
		t.Run(tc.plugin+"/"+tc.tool, func(t *testing.T) {
			r := e.agenthost(t, "plugins", "call", tc.plugin, tc.tool, tc.args)
			var res struct {
				Content []struct{ Text string }
				IsError bool `json:"isError"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 || res.IsError || len(res.Content) != 1 {
				t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			if res.Content[0].Text != tc.want {
				t.Fatalf("got %q, want %q", res.Content[0].Text, tc.want)
			}
		})
	}
	// Denied by default: a host not granted, a path outside the mount.
	r := envs["http_get"].agenthost(t, "plugins", "call", "http_get", "http_get", `{"url":"http://127.0.0.2:1/"}`)
	if r.code != 1 || !strings.Contains(r.stdout, "not in allowed_hosts") {
		t.Fatalf("denied host: exit %d %q", r.code, r.stdout)
	}
	r = envs["files"].agenthost(t, "plugins", "call", "files", "read_file", `{"path":"/etc/passwd"}`)
	if r.code != 1 || !strings.Contains(r.stdout, `"isError": true`) {
		t.Fatalf("path escape: exit %d %q", r.code, r.stdout)
	}
}
