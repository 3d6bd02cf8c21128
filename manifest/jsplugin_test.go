package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A [[plugins]] js entry names its source beside the manifest; the keys a JavaScript
// plugin has no use for (it declares its tools itself, in the mcp abi) are refused.
func TestAJSPluginNamesItsSourceAndNothingItCannotUse(t *testing.T) {
	p := writeManifest(t, goodManifest+"\n[[plugins]]\nname = \"w\"\njs = \"tools/weather.ts\"\n")
	must(t, os.MkdirAll(filepath.Join(filepath.Dir(p), "tools"), 0o755))
	must(t, os.WriteFile(filepath.Join(filepath.Dir(p), "tools", "weather.ts"), []byte("export {}"), 0o644))
	m, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	got := m.Plugins[len(m.Plugins)-1]
	if got.JS != filepath.Join(filepath.Dir(p), "tools", "weather.ts") || got.Wasm != "" {
		t.Errorf("js %q wasm %q", got.JS, got.Wasm)
	}
	for _, c := range []struct{ entry, key, msg string }{
		{"js = \"tools/missing.ts\"", ".js", "cannot read"},
		{"js = \"tools/weather.py\"", ".js", `"tools/weather.py" is not a JavaScript or TypeScript file`},
		{"js = \"../outside.ts\"", ".js", ""},
		{"js = \"tools/weather.ts\"\nabi = \"wasi\"", ".abi", `a JavaScript plugin speaks the mcp abi, not "wasi"`},
		{"js = \"tools/weather.ts\"\n[[plugins.tools]]\nname = \"t\"", ".tools", "declares its tools in its source"},
		{"js = \"tools/weather.ts\"\n[plugins.permissions]\nconfig = { \"agenthost.js.bundle\" = \"x\" }", ".permissions.config", `config keys starting "agenthost.js." are the host's`},
	} {
		body := goodManifest + "\n[[plugins]]\nname = \"w\"\n" + c.entry + "\n"
		must(t, os.WriteFile(p, []byte(body), 0o644))
		_, err := Load(p)
		var me *Error
		if err == nil || !strings.Contains(err.Error(), c.key) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: err = %v, want key %s and %q", c.entry, err, c.key, c.msg)
		} else if !errors.As(err, &me) || !strings.HasSuffix(me.Key, c.key) {
			t.Errorf("%q: key = %v", c.entry, err)
		}
	}
}
