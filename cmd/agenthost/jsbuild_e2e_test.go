package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const builtToolTS = `import { tool } from "agenthost";
import { shout } from "./lib/shout";

tool({
  name: "shout",
  inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  handler(a: { text: string }) {
    if (a.text === "") {
      throw new Error("nothing to shout");
    }
    return shout(a.text);
  },
});
`

// `plugins build` writes the bundle the host would make, with its header and source map;
// a manifest's js runs that file as it is, without its sources, and a thrown error still
// points at the TypeScript line.
func TestE2E_PluginsBuildWritesABundleTheManifestRunsAsItIs(t *testing.T) {
	if err := jsRuntimeBeside(); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	e := &agentEnv{dir: work, manifest: filepath.Join(work, "agent.toml")}
	src := filepath.Join(work, "src")
	os.MkdirAll(filepath.Join(src, "lib"), 0o755)
	os.WriteFile(filepath.Join(src, "shout.ts"), []byte(builtToolTS), 0o644)
	os.WriteFile(filepath.Join(src, "lib", "shout.ts"), []byte("export const shout = (s: string): string => s.toUpperCase() + \"!\";\n"), 0o644)

	r := e.agenthost(t, "plugins", "build", "src/shout.ts")
	if r.code != 0 || !strings.Contains(r.stdout, "wrote src/shout.bundle.js (") || !strings.Contains(r.stdout, `js = "src/shout.bundle.js"`) {
		t.Fatalf("build: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	os.MkdirAll(filepath.Join(work, "dist"), 0o755)
	if r := e.agenthost(t, "plugins", "build", "src/shout.ts", "-o", "dist/shout.js"); r.code != 0 {
		t.Fatalf("build -o: exit %d\n%s", r.code, r.stderr)
	}
	built, err := os.ReadFile(filepath.Join(work, "dist", "shout.js"))
	if err != nil || !strings.HasPrefix(string(built), `// agenthost bundle v1 "shout.ts"`+"\n") || !strings.Contains(string(built), "toUpperCase") ||
		strings.Contains(string(built), "./lib/shout") || !strings.Contains(string(built), "\n//# sourceMappingURL=data:application/json;base64,") {
		t.Fatalf("dist/shout.js (%v):\n%s", err, built)
	}
	// The bundle stands alone: the sources are gone.
	if err := os.RemoveAll(src); err != nil {
		t.Fatal(err)
	}
	if r := e.agenthost(t, "plugins", "call", "dist/shout.js", "shout", `{"text":"hi"}`); r.code != 0 || !strings.Contains(r.stdout, "HI!") {
		t.Fatalf("call the bundle: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := e.agenthost(t, "plugins", "call", "dist/shout.js", "shout", `{"text":""}`); r.code != 1 ||
		!strings.Contains(r.stdout, `shout: Error: nothing to shout\n\tat handler (shout.ts:9:13)`) {
		t.Fatalf("the stack of the bundle: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// A manifest's js names the built file like a source.
	os.WriteFile(e.manifest, []byte("[store]\nkind = \"memory\"\n[[plugins]]\nname = \"shout\"\njs = \"dist/shout.js\"\n"), 0o644)
	if r := e.agenthost(t, "plugins", "verify"); r.code != 0 || !strings.Contains(r.stdout, "ok  shout (mcp, 1 tool") {
		t.Fatalf("verify: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// The source is never overwritten, and a file that is not JS is not bundled.
	os.WriteFile(filepath.Join(work, "a.ts"), []byte(builtToolTS), 0o644)
	if r := e.agenthost(t, "plugins", "build", "a.ts", "-o", "./a.ts"); r.code != 2 || !strings.Contains(r.stderr, "-o ./a.ts is the source itself") {
		t.Fatalf("-o the source: exit %d\n%s", r.code, r.stderr)
	}
	if r := e.agenthost(t, "plugins", "build", "agent.toml"); r.code != 2 || !strings.Contains(r.stderr, "agent.toml is not a JavaScript or TypeScript file") {
		t.Fatalf("build a toml: exit %d\n%s", r.code, r.stderr)
	}
}
