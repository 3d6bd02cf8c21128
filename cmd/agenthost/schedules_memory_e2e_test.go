package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The background-memory example (examples/background-memory) runs as its comments say: a
// session of alice's from before memory was on is consolidated by `schedules run`, as
// alice, into her memories through the memory plugin; a second fire adds nothing (the
// plugin deduplicates against what she already remembers); bob's session is not read.
func TestE2E_BackgroundMemoryExampleConsolidatesTheUsersSessions(t *testing.T) {
	build := exec.Command("bash", "scripts/plugins.d/examples.sh", "remember_phrases")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build remember_phrases: %v\n%s", err, out)
	}
	src := filepath.Join(repoRoot, "examples", "background-memory")
	b, err := os.ReadFile(filepath.Join(src, "agent.toml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	m := strings.ReplaceAll(string(b), `"../../plugins/`, `"`+filepath.Join(repoRoot, "plugins")+"/")
	m = strings.Replace(m, `command = "agenthost-provider-scripted"`, `command = "`+filepath.Join(binDir, "agenthost-provider-scripted")+`"`, 1)
	fixture, _ := os.ReadFile(filepath.Join(src, "model.json"))
	os.WriteFile(filepath.Join(dir, "model.json"), fixture, 0o644)
	// Before memory was on: the sessions hold what no memory has yet.
	os.WriteFile(filepath.Join(dir, "agent.toml"), []byte(strings.Replace(m, "enabled = true", "enabled = false", 1)), 0o644)
	e := &agentEnv{dir: dir, manifest: filepath.Join(dir, "agent.toml")}
	for _, u := range []string{"alice", "bob"} {
		if r := e.agenthost(t, "users", "add", u, "--role", "user"); r.code != 0 {
			t.Fatalf("users add %s: %d %s", u, r.code, r.stderr)
		}
	}
	for user, text := range map[string]string{"alice": "remember that my cat is called Tom", "bob": "remember that I live in Oslo"} {
		if r := e.agenthost(t, "run", "--user", user, text); r.code != 0 {
			t.Fatalf("run as %s: %d %s", user, r.code, r.stderr)
		}
	}
	os.WriteFile(e.manifest, []byte(m), 0o644)

	memories := func(user string) []map[string]any {
		r := e.agenthost(t, "memory", "list", "--user", user, "--json")
		var out []map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("memory list: %v %s %s", err, r.stdout, r.stderr)
		}
		return out
	}
	if got := memories("alice"); len(got) != 0 {
		t.Fatalf("alice remembers before the fire: %v", got)
	}
	r := e.agenthost(t, "schedules", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "alice-memory  cron 0 3 * * *") || !strings.Contains(r.stdout, "run_once") {
		t.Fatalf("schedules list: %d %s %s", r.code, r.stdout, r.stderr)
	}
	for range 2 {
		if r := e.agenthost(t, "schedules", "run", "alice-memory"); r.code != 0 || !strings.Contains(r.stdout, `"status": "completed"`) {
			t.Fatalf("schedules run: %d %s %s", r.code, r.stdout, r.stderr)
		}
	}
	got := memories("alice")
	if len(got) != 1 || !strings.Contains(got[0]["text"].(string), "my cat is called Tom") || !strings.HasPrefix(got[0]["session"].(string), "sched-alice-memory-") {
		t.Fatalf("alice's memories after two fires: %v", got)
	}
	for _, mem := range got {
		if strings.Contains(mem["text"].(string), "Oslo") {
			t.Fatalf("bob's session was consolidated into alice's memory: %v", got)
		}
	}
	if got := memories("bob"); len(got) != 0 {
		t.Fatalf("bob's memory changed: %v", got)
	}
}
