package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The first run on an empty compilation cache says on stderr that it is compiling the
// plugin (seconds of silence otherwise); a second run, served from the cache, does not;
// --json stdout carries events only either way.
func TestE2E_FirstCompileOfAPluginSaysSoOnceOnStderr(t *testing.T) {
	t.Setenv("AGENTHOST_CACHE_DIR", "") // the manifest's own cache, empty
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "one"}, {"text": "two"}]}`})
	const line = "compiling calc.wasm (first run; cached afterwards)"
	cold := e.agenthost(t, "run", "--json", "hello")
	if cold.code != 0 {
		t.Fatalf("cold run: exit %d %s", cold.code, cold.stderr)
	}
	if strings.Count(cold.stderr, line) != 1 {
		t.Fatalf("cold cache: stderr lacks %q once:\n%s", line, cold.stderr)
	}
	events(t, cold.stdout) // every stdout line is an event
	if strings.Contains(cold.stdout, "compiling") {
		t.Fatalf("the progress line reached --json stdout:\n%s", cold.stdout)
	}
	warm := e.agenthost(t, "run", "--json", "hello")
	if warm.code != 0 {
		t.Fatalf("warm run: exit %d %s", warm.code, warm.stderr)
	}
	if strings.Contains(warm.stderr, "compiling") {
		t.Fatalf("warm cache: stderr still says compiling:\n%s", warm.stderr)
	}
}

// A .wasm called by path beside a manifest is compiled into the manifest's cache, so the
// same module run through the manifest afterwards is not compiled a second time (it was:
// by path into the user's cache, then into the manifest's).
func TestE2E_AModuleCalledByPathThenThroughTheManifestCompilesOnce(t *testing.T) {
	t.Setenv("AGENTHOST_CACHE_DIR", "")
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "one"}]}`})
	byPath := e.agenthost(t, "plugins", "call", calcWasm, "calc", `{"expression":"6*7"}`)
	if byPath.code != 0 || !strings.Contains(byPath.stdout, "42") {
		t.Fatalf("call by path: exit %d %s %s", byPath.code, byPath.stdout, byPath.stderr)
	}
	run := e.agenthost(t, "run", "--json", "hello")
	if run.code != 0 {
		t.Fatalf("run: exit %d %s", run.code, run.stderr)
	}
	if strings.Contains(run.stderr, "compiling") {
		t.Fatalf("the manifest compiled the module the call by path had compiled:\n%s", run.stderr)
	}
}

// AGENTHOST_CACHE_DIR is one compilation cache for every manifest: a module compiled for
// one project is not compiled again for another, and nothing is written beside either
// manifest.
func TestE2E_AGENTHOST_CACHE_DIRIsOneCacheForEveryManifest(t *testing.T) {
	shared := t.TempDir()
	t.Setenv("AGENTHOST_CACHE_DIR", shared)
	const line = "compiling calc.wasm (first run; cached afterwards)"
	for i, want := range []int{1, 0} {
		e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "one"}]}`})
		r := e.agenthost(t, "run", "--json", "hello")
		if r.code != 0 || strings.Count(r.stderr, line) != want {
			t.Fatalf("project %d: exit %d, want %q %d times on stderr:\n%s", i+1, r.code, line, want, r.stderr)
		}
		if _, err := os.Stat(filepath.Join(e.dir, ".agenthost", "cache")); !os.IsNotExist(err) {
			t.Fatalf("project %d: a cache beside the manifest (%v); want none", i+1, err)
		}
	}
	if held, _ := os.ReadDir(shared); len(held) == 0 {
		t.Fatalf("nothing compiled into %s", shared)
	}
}
