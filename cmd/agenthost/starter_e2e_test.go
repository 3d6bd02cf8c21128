package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/testbin"
)

// The starter manifest run with no OPENAI_API_KEY stops at once with exit 2 and the
// variable's name, before any model call: no retried errors, no DNS or 401 noise.
func TestE2E_StarterManifestWithoutAPIKeySaysSoInsteadOfRetrying(t *testing.T) {
	// The starter manifest finds the adapter next to agenthost, where this puts it.
	testbin.Path(t, testbin.OpenAI)
	run := starterDir(t)
	if _, errs, code := run("init"); code != 0 {
		t.Fatalf("init: %d %s", code, errs)
	}
	out, errs, code := run("run", "--json", "hello")
	if code != 2 || !strings.Contains(errs, "OPENAI_API_KEY is not set: export it or use --provider scripted") {
		t.Fatalf("exit %d, stderr:\n%s", code, errs)
	}
	if strings.Contains(out, `"type":"error"`) || strings.Contains(errs, "retrying") || strings.Contains(errs, "attempts") {
		t.Fatalf("a model call was made and retried:\n%s\n%s", out, errs)
	}
	// The hint works as it says.
	if out, errs, code = run("run", "--provider", "scripted", "hello"); code != 0 || !strings.Contains(out, "Hello from the scripted provider") {
		t.Fatalf("--provider scripted: exit %d\n%s\n%s", code, out, errs)
	}
}

// starterDir is an empty directory and a way to run agenthost in it with no OPENAI_*
// variables, as a newcomer following the README would.
func starterDir(t *testing.T) func(args ...string) (string, string, int) {
	t.Helper()
	work := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") {
			env = append(env, kv)
		}
	}
	run := func(args ...string) (string, string, int) {
		cmd := exec.Command(filepath.Join(binDir, "agenthost"), args...)
		cmd.Dir, cmd.Env = work, env
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}
	return run
}

// The starter manifest's agent.model is meant for its openai provider: a scripted run
// of it reports the scripted model in run_started (the name spans carry too), not
// gpt-4o-mini, which nothing ran.
func TestE2E_StarterManifestScriptedRunIsLabelledScripted(t *testing.T) {
	run := starterDir(t)
	if _, errs, code := run("init"); code != 0 {
		t.Fatalf("init: %d %s", code, errs)
	}
	out, errs, code := run("run", "--provider", "scripted", "--json", "hello")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, errs)
	}
	var first struct {
		Type string
		Data struct{ Model string }
	}
	if err := json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &first); err != nil || first.Type != "run_started" {
		t.Fatalf("first event %v: %s", err, out)
	}
	if first.Data.Model != "scripted" {
		t.Fatalf("run_started model %q, want scripted", first.Data.Model)
	}
}
