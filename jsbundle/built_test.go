package jsbundle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestABuiltBundleIsTakenAsItIs(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"tool.ts": "import { tool } from \"agenthost\";\ntool({ name: \"t\", handler: (a: { n: number }) => a.n * 2 });\n",
	})
	b, err := Build(filepath.Join(dir, "tool.ts"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b.Code), Header+`"tool.ts"`+"\n") {
		t.Fatalf("the bundle does not open with its header:\n%s", b.Code)
	}
	built := filepath.Join(dir, "tool.bundle.js")
	if err := os.WriteFile(built, b.Code, 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := Build(built)
	if err != nil || again.File != "tool.ts" || string(again.Code) != string(b.Code) {
		t.Fatalf("the built file bundled again: %q, %v\n%s", again.File, err, again.Code)
	}
	for name, body := range map[string]string{
		"noname.js": Header + "\nmodule.exports = 1;\n",
		"path.js":   Header + `"../etc/x.ts"` + "\n",
		"bad.js":    Header + `"x.ts"` + "\n\"\xff\"\n",
		"huge.js":   Header + `"x.ts"` + "\n" + strings.Repeat("/", MaxBundle),
	} {
		write(t, dir, map[string]string{name: body})
		_, err := Build(filepath.Join(dir, name))
		want := map[string]string{"noname.js": "names no source file", "path.js": "names no source file",
			"bad.js": "is not UTF-8", "huge.js": "over the 8388608 bytes"}[name]
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
}
