package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Through the binary, in one serve process (breakers and limits live per process): a
// primary answering 500s falls back to the backup; its breaker opens after two failures,
// skips it, half-opens after the cool-down and closes on a good probe.
func TestE2E_FallbackChainAndCircuitBreaker(t *testing.T) {
	dir := t.TempDir()
	// One sequence over the runs of several sessions: the breaker's story.
	os.WriteFile(filepath.Join(dir, "primary.json"), []byte(`{"per_session": false, "turns": [
	  {"error": {"kind": "overloaded", "message": "HTTP 500: upstream down"}},
	  {"error": {"kind": "overloaded", "message": "HTTP 500: upstream down"}},
	  {"text": "primary is back"}]}`), 0o644)
	os.WriteFile(filepath.Join(dir, "backup.json"), []byte(`{"repeat": true, "turns": [{"text": "backup answered"}]}`), 0o644)
	scripted := filepath.Join(binDir, "agenthost-provider-scripted")
	manifest := fmt.Sprintf(`[agent]
provider = ["primary", "backup"]
[agent.retry]
max_attempts = 1
[providers.primary]
command = %q
options = { script = "primary.json" }
breaker_failures = 2
breaker_cooldown = "1s"
[providers.backup]
command = %q
options = { script = "backup.json" }
pricing = { prompt_per_mtok = 1.0, completion_per_mtok = 2.0 }
[store]
kind = "memory"
`, scripted, scripted)
	os.WriteFile(filepath.Join(dir, "agent.toml"), []byte(manifest), 0o644)
	e := &agentEnv{dir: dir, manifest: filepath.Join(dir, "agent.toml")}
	s := e.serve(t)
	run := func(thread string) string {
		resp := s.postRun(t, thread, "r-"+thread, "hello")
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	has := func(what, body string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Fatalf("%s lacks %s:\n%s", what, w, body)
			}
		}
	}
	fallback := `"name":"agenthost.error","value":{"kind":"provider_fallback","message":"provider primary failed (overloaded: HTTP 500: upstream down); the call goes to backup"`
	r1 := run("t1")
	has("run 1", r1, fallback, `"delta":"backup answered"`, `"provider":"backup"`)
	r2 := run("t2")
	has("run 2", r2, fallback, `"name":"agenthost.circuit","value":{"provider":"primary","state":"open"`)
	r3 := run("t3")
	has("run 3", r3, `"delta":"backup answered"`)
	if strings.Contains(r3, "provider_fallback") {
		t.Fatalf("run 3 tried the primary while its circuit was open:\n%s", r3)
	}
	time.Sleep(1200 * time.Millisecond) // the cool-down (a wait, not a measurement)
	r4 := run("t4")
	has("run 4", r4, `"state":"half_open"`, `"state":"closed"`, `"delta":"primary is back"`)
}
