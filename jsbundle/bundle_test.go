package jsbundle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evanw/esbuild/pkg/api"
)

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestATypeScriptEntryAndItsImportsBecomeOneScriptWithASourceMap(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"tool.ts":   "import { tool } from \"agenthost\";\nimport { twice } from \"./helper\";\ninterface A { n: number }\ntool({ name: \"t\", handler: (a: A) => twice(a.n) });\n",
		"helper.ts": "export const twice = (n: number): number => n * 2;\n",
	})
	b, err := Build(filepath.Join(dir, "tool.ts"))
	if err != nil {
		t.Fatal(err)
	}
	code := string(b.Code)
	if b.File != "tool.ts" || !strings.Contains(code, `require("agenthost")`) || !strings.Contains(code, "n * 2") ||
		strings.Contains(code, "interface") || !strings.Contains(code, "\n//# sourceMappingURL=data:application/json;base64,") {
		t.Errorf("bundle %s:\n%s", b.File, code)
	}
	cfg, err := b.Config(map[string]string{"unit": "C"})
	if err != nil || cfg["unit"] != "C" || cfg[ConfigBundle] != code || cfg[ConfigFile] != "tool.ts" {
		t.Errorf("config = %v, %v", cfg, err)
	}
	if _, err := b.Config(map[string]string{ConfigBundle: "mine"}); err == nil || !strings.Contains(err.Error(), "is the host's") {
		t.Errorf("a manifest's own %s: %v", ConfigBundle, err)
	}
}

func TestASourceThatDoesNotBuildSaysWhereAndWhy(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"bad.ts":     "const x: number = ;\n",
		"missing.ts": "import { y } from \"./nowhere\";\nexport const z = y;\n",
	})
	for name, want := range map[string]string{
		"bad.ts":     "bad.ts:1:19: Unexpected \";\"",
		"missing.ts": "missing.ts:1:19: Could not resolve \"./nowhere\"",
		"absent.ts":  "Could not resolve",
	} {
		if _, err := Build(filepath.Join(dir, name)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
}

// The declarations a scaffold writes are TypeScript esbuild reads.
func TestTheAgenthostTypesAreTypeScript(t *testing.T) {
	res := api.Transform(Types, api.TransformOptions{Loader: api.LoaderTS})
	if len(res.Errors) > 0 {
		t.Fatalf("agenthost.d.ts: %s", describe(res.Errors))
	}
	for _, name := range []string{"function tool", "function guard", "const kv", "const config", "const http", "const log", "function createMessage", "function callMeta", "function progress", "function onStep", "function beforeFinal", "function contextBuild", "function permit", "function grade"} {
		if !strings.Contains(Types, name) {
			t.Errorf("agenthost.d.ts declares no %s", name)
		}
	}
}
