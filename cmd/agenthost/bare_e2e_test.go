package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// bareEnv runs agenthost in an empty directory with its own user cache directory
// (XDG_CACHE_HOME), and no manifest.
func bareEnv(t *testing.T) (run func(args ...string) result, cwd, cache string) {
	cwd, cache = t.TempDir(), t.TempDir()
	return func(args ...string) result {
		t.Helper()
		cmd := exec.Command(filepath.Join(binDir, "agenthost"), args...)
		cmd.Dir = cwd
		cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		code := 0
		if err := cmd.Run(); err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatal(err)
			}
			code = ee.ExitCode()
		}
		return result{out.String(), errb.String(), code}
	}, cwd, cache
}

// plugins call FILE.wasm leaves nothing in the current directory: the compiled module is
// cached in the user's cache directory.
func TestE2E_PluginsCallOnAPathCachesInTheUserCacheDir(t *testing.T) {
	t.Setenv("AGENTHOST_CACHE_DIR", "") // the user's cache, as with no such setting
	run, cwd, cache := bareEnv(t)
	if r := run("plugins", "call", calcWasm, "calc", `{"expression":"2+3"}`); r.code != 0 || !strings.Contains(r.stdout, `"text": "5"`) {
		t.Fatalf("call: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	if left, _ := os.ReadDir(cwd); len(left) != 0 {
		t.Fatalf("the call left %v in the current directory", left)
	}
	if cached, _ := os.ReadDir(filepath.Join(cache, "agenthost")); len(cached) == 0 {
		t.Fatalf("nothing cached under %s", filepath.Join(cache, "agenthost"))
	}
}

// plugins inspect takes a .wasm path as plugins call does, with no manifest.
func TestE2E_PluginsInspectTakesAWasmPath(t *testing.T) {
	run, _, _ := bareEnv(t)
	r := run("plugins", "inspect", calcWasm)
	var got struct {
		Name, ABI string
		Tools     []struct{ Name string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 {
		t.Fatalf("inspect: exit %d %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	if got.Name != "calc" || got.ABI != "mcp" || len(got.Tools) != 1 || got.Tools[0].Name != "calc" {
		t.Fatalf("inspect: %+v", got)
	}
	if r = run("plugins", "inspect", "missing.wasm"); r.code != 2 {
		t.Fatalf("missing file: exit %d %s", r.code, r.stderr)
	}
}
